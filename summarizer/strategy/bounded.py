"""Bounded summarizer input for the window strategy: what a fold sends the model, the ledger of the rest, and
the earlier summaries carried forward without being sent again.

A fold replaces everything older than the kept tail. Sent whole, each call would re-send a window's worth of
history and every earlier summary, and with a paid summary model that input is the bill. So a fold's prompt
holds only the span being dropped that is not a summary yet, its newest messages within `limit_bytes` (a tool
call always goes with its results), and the user's requests cut to a share of the bound (they are context,
not content). The rest is kept without model cost:
  - the messages left out are still replaced (lineage covers them); what must not be lost from them, the typed
    findings and identifiers the model's summary does not quote, is appended to its summary as the ledger
    (summarizer.extractive.ledger), computed from the whole span, itself bounded;
  - the earlier summaries of the span are not sent again: the model's new summary is merged into them
    deterministically by the offline summarizer's merge (one section per briefing title, lines kept verbatim,
    the newest first when space is short), within `summary_bytes`, so summaries stay bounded relative to the
    window however long the chain runs. A span that holds only summaries costs no call at all.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from summarizer.chain.messages import content_text, message_size
from summarizer.chain.nodes import SUMMARIZATION_TOOL, SUMMARY_PREFIX
from summarizer.extractive.briefing import extractive_summarize
from summarizer.extractive.ledger import ledger_for
from summarizer.passes.prompts import build_summary_prompt
from summarizer.passes.stages import Batch, Outcome, PassGen

__all__ = ["BoundedPrompts", "bounded", "merge_summaries", "MESSAGE_FRAME_BYTES", "LEDGER_SHARE", "TASK_SHARE"]

Message = dict[str, Any]
MESSAGE_FRAME_BYTES = 80  # the <message>/<content>/<tool_call> tags around each message in the prompt
LEDGER_SHARE = 4  # a ledger gets at most a quarter of the input bound: summaries must not grow without end
TASK_SHARE = 4  # the user's requests, context of every fold's prompt, get at most a quarter of the input bound
MERGE_ONLY = "\x00merge-only:"  # the prompt of a span holding only earlier summaries: answered here, never sent


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


def _cut_message(message: Message, room: int) -> Message:
    """A copy of `message` for a prompt, its text and tool-call arguments each cut to `room` bytes."""
    if message_size(message) <= room:
        return message
    text = content_text(message)
    out = {**message, "content": (_cut(text, room) or text[:room]) if text else message.get("content")}
    if message.get("tool_calls"):
        out["tool_calls"] = [{**c, "function": {**fn, "arguments": str(fn.get("arguments"))[:room]}}
                             if (fn := c.get("function")) else c for c in message["tool_calls"]]
    return out


def _cut_unit(unit: Sequence[Message], limit: int) -> list[Message]:
    """A unit's messages cut to their share of `limit` (what is cut is still in the span's ledger)."""
    room = max(limit // max(len(unit), 1) - MESSAGE_FRAME_BYTES, 0)
    return [_cut_message(m, room) for m in unit]


@dataclass(frozen=True)
class _Fold:
    span: str  # the prompt of the whole span without its earlier summaries: what the ledger is computed from
    carried: tuple[str, ...]  # the span's earlier summaries, merged with the model's answer, never sent


class BoundedPrompts:
    """`build_prompt` for PassContext: prompts within `limit_bytes` that never re-send an earlier summary;
    remembers what each prompt left out and carried forward, so `finish` can complete the model's answer."""

    def __init__(self, limit_bytes: int, summary_bytes: int) -> None:
        self.limit_bytes = limit_bytes
        self.summary_bytes = summary_bytes
        self.folds: dict[str, _Fold] = {}

    def __call__(self, humans: Sequence[Message], messages: Sequence[Message]) -> str:
        units = _units(messages)
        carried = tuple(_summary_text(u) for u in units if _is_summary(u[0]))
        fresh = [u for u in units if not _is_summary(u[0])]
        if not fresh:
            if not carried:  # nothing at all: PentAGI's prompt of the requests alone
                return build_summary_prompt(humans, messages)
            prompt = MERGE_ONLY + str(len(self.folds))
            self.folds[prompt] = _Fold("", carried)
            return prompt
        tasks = _cut_humans(humans, self.limit_bytes // TASK_SHARE)
        budget = self.limit_bytes - sum(len(content_text(h).encode("utf-8")) for h in tasks)
        newest: list[list[Message]] = []
        for unit in reversed(fresh):
            if _size(unit) > budget:
                break
            newest.insert(0, unit)
            budget -= _size(unit)
        if not newest:  # a prompt needs something: the newest step, cut to the bound (its ledger keeps the rest)
            newest = [_cut_unit(fresh[-1], max(budget, self.limit_bytes // TASK_SHARE))]
        span = build_summary_prompt(humans, [m for u in fresh for m in u])
        prompt = build_summary_prompt(tasks, [m for u in newest for m in u])
        self.folds[prompt] = _Fold(span if span != prompt else "", carried)
        return prompt

    def finish(self, prompt: str, summary: str) -> str:
        """The model's summary of `prompt`, with the ledger of what the prompt left out, merged into the earlier
        summaries it carried forward, within `summary_bytes`."""
        fold = self.folds.get(prompt)
        if fold is None:
            return summary
        if fold.span:
            ledger = _cut(ledger_for(fold.span, summary), self.limit_bytes // LEDGER_SHARE)
            summary = f"{summary.rstrip()}\n\n{ledger}" if ledger else summary
        return merge_summaries([*fold.carried, summary], self.summary_bytes)


def bounded(gen: PassGen, prompts: BoundedPrompts) -> PassGen:
    """Drive `gen` (whose context builds prompts with `prompts`): only prompts with something new go to the
    model, each answer is completed by `prompts.finish`; failures pass through unchanged."""
    batch = next(gen, None)
    while batch is not None:
        sent = tuple(p for p in batch.prompts if not p.startswith(MERGE_ONLY))
        answers: list[Outcome] = (yield Batch(batch.stage, sent)) if sent else []
        by_prompt = dict(zip(sent, answers, strict=False))
        outcomes = [by_prompt.get(p, "") for p in batch.prompts]
        answered = [prompts.finish(p, o) if isinstance(o, str) else o
                    for p, o in zip(batch.prompts, outcomes, strict=False)]
        try:
            batch = gen.send(answered)
        except StopIteration:
            return
