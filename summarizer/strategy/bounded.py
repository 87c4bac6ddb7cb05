"""Bounded summarizer input for the window strategy: what a fold sends the model, the ledger of the rest, and
the earlier summaries carried forward without being sent again.

A fold replaces everything older than the kept tail. Sent whole, each call would re-send a window's worth of
history and every earlier summary, and with a paid summary model that input is the bill. So a fold's prompt
holds only the span being dropped that is not a summary yet, and the user's requests cut to a share of the
bound (they are context, not content): the span as it is when it fits within `limit_bytes`, else its extractive
digest within the bound (the offline summarizer's briefing of the whole span: actions, findings, dead ends,
identifiers), marked as distilled content, so the model reads all of the span's substance rather than only its
newest messages. The rest is kept without model cost:
  - what must not be lost, the typed findings and identifiers the model's summary does not quote, is appended
    to its summary as the ledger (summarizer.extractive.ledger), computed from the whole span, within a share
    of the summary's budget (the ledger is local: bounding it by the input bound lost facts for nothing);
  - the earlier summaries of the span are not sent again: the model's new summary is merged into them
    deterministically by the offline summarizer's merge (one section per briefing title, lines kept verbatim,
    the newest first when space is short), within `summary_bytes`, so summaries stay bounded relative to the
    window however long the chain runs. A span that holds only summaries costs no call at all;
  - with `local` (setting `window_local_folds`), a span the offline summarizer folds as well as a model makes
    no call either (`folds_locally`): one of tool calls and their output only, with no words of the agent's to
    condense, or one that fits within the summary's budget, so its extractive summary keeps nearly all of it.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from summarizer.chain.messages import content_text, message_size
from summarizer.chain.nodes import SUMMARIZATION_TOOL, SUMMARY_PREFIX
from summarizer.extractive.briefing import extractive_summarize
from summarizer.extractive.ledger import ledger_for
from summarizer.passes.prompts import INSTRUCTIONS_BOUNDED, build_summary_prompt
from summarizer.passes.stages import Batch, Outcome, PassGen

__all__ = ["BoundedPrompts", "bounded", "merge_summaries", "folds_locally", "MESSAGE_FRAME_BYTES", "LEDGER_SHARE",
           "TASK_SHARE", "MIN_DIGEST_BYTES"]

Message = dict[str, Any]
MESSAGE_FRAME_BYTES = 80  # the <message>/<content>/<tool_call> tags around each message in the prompt
LEDGER_SHARE = 4  # a ledger gets at most a quarter of the summary's budget: summaries must not grow without end
TASK_SHARE = 4  # the user's requests, context of every fold's prompt, get at most a quarter of the input bound
MIN_DIGEST_BYTES = 256  # a digest smaller than this says nothing the ledger does not
LOCAL = "\x00local:"  # the prompt of a fold answered here, by the offline summarizer, never sent to the model


def _is_summary(message: Message) -> bool:
    calls = message.get("tool_calls") or ()
    if any((c.get("function") or {}).get("name") == SUMMARIZATION_TOOL for c in calls):
        return True
    return message.get("role") == "assistant" and content_text(message).startswith(SUMMARY_PREFIX.rstrip())


def _summary_text(unit: Sequence[Message]) -> str:
    """The text of a summary unit: the summary tool's answer, or the text after the summarized-content prefix."""
    if len(unit) > 1:
        return "\n".join(content_text(m) for m in unit[1:])
    return content_text(unit[0]).removeprefix(SUMMARY_PREFIX.rstrip()).strip()


def _units(messages: Sequence[Message]) -> list[list[Message]]:
    """Messages grouped so that a tool call is never sent without its results (nor a result without its call)."""
    units: list[list[Message]] = []
    for message in messages:
        if message.get("role") == "tool" and units:
            units[-1].append(message)
        else:
            units.append([message])
    return units


def _size(unit: Sequence[Message]) -> int:
    return sum(message_size(m) + MESSAGE_FRAME_BYTES for m in unit)


def _cut(text: str, limit: int) -> str:
    """`text` within `limit` bytes, cut after the last separator that fits (never mid-identifier)."""
    if len(text.encode("utf-8")) <= limit:
        return text
    head = text.encode("utf-8")[:limit].decode("utf-8", errors="ignore")
    end = max(head.rfind("\n"), head.rfind(", "))
    return head[:end] if end > 0 else ""


def _as_summary_messages(texts: Sequence[str]) -> list[Message]:
    """Summaries as PentAGI's summary pairs, the shape the offline summarizer reads as earlier summaries."""
    out: list[Message] = []
    for i, text in enumerate(texts):
        call_id = f"merge_{i}"
        out.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": SUMMARIZATION_TOOL, "arguments": "{}"}}]})
        out.append({"role": "tool", "tool_call_id": call_id, "content": text})
    return out


def merge_summaries(texts: Sequence[str], budget_bytes: int) -> str:
    """One summary of `texts` (oldest first) within `budget_bytes`, with no model: the offline summarizer's merge
    of earlier summaries. A single text already within the budget is returned as written."""
    texts = [t for t in texts if t.strip()]
    if len(texts) == 1 and len(texts[0].encode("utf-8")) <= budget_bytes:
        return texts[0]
    if not texts:
        return ""
    return extractive_summarize(build_summary_prompt([], _as_summary_messages(texts)), budget_bytes=budget_bytes)


def _cut_humans(humans: Sequence[Message], limit: int) -> list[Message]:
    """The user's requests within `limit` bytes in all, each cut at a line end: context for the summary."""
    room = max(limit // max(len(humans), 1), 0)
    out = []
    for human in humans:
        text = content_text(human)
        out.append(human if len(text.encode("utf-8")) <= room else {"role": "user", "content": _cut(text, room)})
    return out


@dataclass(frozen=True)
class _Fold:
    span: str  # the prompt of the whole span without its earlier summaries: what the ledger is computed from
    carried: tuple[str, ...]  # the span's earlier summaries, merged with the model's answer, never sent
    local: bool = False  # folded by the offline summarizer: no model call


def _has_reasoning(units: Sequence[Sequence[Message]]) -> bool:
    """Whether the agent wrote anything in the span besides its tool calls (what only a model can condense)."""
    return any(m.get("role") == "assistant" and content_text(m).strip() for u in units for m in u)


def folds_locally(units: Sequence[Sequence[Message]], summary_bytes: int) -> bool:
    """Whether the offline summarizer folds this span as well as a model would, so no call is made: a span of
    tool calls and their output only (commands, results, findings, identifiers: what the extractive summary
    keeps by construction; a model would add no reasoning the agent did not write), or one whose messages fit
    within the summary's budget (its extractive summary keeps nearly all of it)."""
    return not _has_reasoning(units) or sum(_size(u) for u in units) <= summary_bytes


class BoundedPrompts:
    """`build_prompt` for PassContext: prompts within `limit_bytes` that never re-send an earlier summary;
    remembers what each prompt left out and carried forward, so `finish` can complete the model's answer."""

    def __init__(self, limit_bytes: int, summary_bytes: int, *, local: bool = False) -> None:
        self.limit_bytes = limit_bytes
        self.summary_bytes = summary_bytes
        self.local = local
        self.folds: dict[str, _Fold] = {}
        self.local_folds = 0  # folds of new content made here without a model call (`local`)

    def _local(self, span: str, carried: tuple[str, ...]) -> str:
        prompt = LOCAL + str(len(self.folds))
        self.folds[prompt] = _Fold(span, carried, local=True)
        return prompt

    def __call__(self, humans: Sequence[Message], messages: Sequence[Message]) -> str:
        units = _units(messages)
        carried = tuple(_summary_text(u) for u in units if _is_summary(u[0]))
        fresh = [u for u in units if not _is_summary(u[0])]
        if not fresh:
            if not carried:  # nothing at all: PentAGI's prompt of the requests alone
                return build_summary_prompt(humans, messages)
            return self._local("", carried)
        span = build_summary_prompt(humans, [m for u in fresh for m in u])
        if self.local and folds_locally(fresh, self.summary_bytes):
            self.local_folds += 1
            return self._local(span, carried)
        tasks = _cut_humans(humans, self.limit_bytes // TASK_SHARE)
        budget = self.limit_bytes - sum(len(content_text(h).encode("utf-8")) for h in tasks)
        if sum(_size(u) for u in fresh) <= budget:  # the span as it is: nothing to leave out
            prompt = build_summary_prompt(tasks, [m for u in fresh for m in u], instructions=INSTRUCTIONS_BOUNDED)
        else:  # its digest: all of the span's substance within the bound, the ledger keeps what it leaves out
            digest = extractive_summarize(span, budget_bytes=max(budget, MIN_DIGEST_BYTES))
            prompt = build_summary_prompt(tasks, [{"role": "assistant", "content": SUMMARY_PREFIX + digest}],
                                          instructions=INSTRUCTIONS_BOUNDED)
        self.folds[prompt] = _Fold(span if span != prompt else "", carried)
        return prompt

    def finish(self, prompt: str, summary: str) -> str:
        """The model's summary of `prompt`, with the ledger of what the prompt left out, merged into the earlier
        summaries it carried forward, within `summary_bytes`."""
        fold = self.folds.get(prompt)
        if fold is None:
            return summary
        if fold.local:
            local = extractive_summarize(fold.span, budget_bytes=self.summary_bytes) if fold.span else ""
            return merge_summaries([*fold.carried, local], self.summary_bytes)
        if fold.span:
            ledger = _cut(ledger_for(fold.span, summary), self.summary_bytes // LEDGER_SHARE)
            summary = f"{summary.rstrip()}\n\n{ledger}" if ledger else summary
        return merge_summaries([*fold.carried, summary], self.summary_bytes)


def bounded(gen: PassGen, prompts: BoundedPrompts) -> PassGen:
    """Drive `gen` (whose context builds prompts with `prompts`): only prompts with something new go to the
    model, each answer is completed by `prompts.finish`; failures pass through unchanged."""
    batch = next(gen, None)
    while batch is not None:
        sent = tuple(p for p in batch.prompts if not p.startswith(LOCAL))
        answers: list[Outcome] = (yield Batch(batch.stage, sent)) if sent else []
        by_prompt = dict(zip(sent, answers, strict=False))
        outcomes = [by_prompt.get(p, "") for p in batch.prompts]
        answered = [prompts.finish(p, o) if isinstance(o, str) else o
                    for p, o in zip(batch.prompts, outcomes, strict=False)]
        try:
            batch = gen.send(answered)
        except StopIteration:
            return
