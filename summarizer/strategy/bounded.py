"""Bounded summarizer input for the window strategy: what a fold sends the model, and the ledger of the rest.

A fold replaces everything older than the kept tail, so without a bound each call re-sends a window's worth of
history, and with a paid summary model that input is the bill. With a bound, the prompt holds the earlier
summaries at the start of the span (they already stand for the older history) and the newest messages of the
span that fit; a tool call always goes with its results. The messages left out are still replaced (lineage
covers them), and what must not be lost from them, the typed findings and identifiers the model's summary does
not quote, is appended to its summary as the ledger (summarizer.extractive.ledger), computed here from the
whole span at no model cost, itself bounded so that summaries do not grow without end.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from summarizer.chain.messages import content_text, message_size
from summarizer.chain.nodes import SUMMARIZATION_TOOL, SUMMARY_PREFIX
from summarizer.extractive.ledger import ledger_for
from summarizer.passes.prompts import build_summary_prompt
from summarizer.passes.stages import Batch, Outcome, PassGen

__all__ = ["BoundedPrompts", "bounded", "MESSAGE_FRAME_BYTES", "LEDGER_SHARE"]

Message = dict[str, Any]
MESSAGE_FRAME_BYTES = 80  # the <message>/<content>/<tool_call> tags around each message in the prompt
LEDGER_SHARE = 4  # a ledger gets at most a quarter of the input bound: summaries must not grow without end


def _is_summary(message: Message) -> bool:
    calls = message.get("tool_calls") or ()
    if any((c.get("function") or {}).get("name") == SUMMARIZATION_TOOL for c in calls):
        return True
    return message.get("role") == "assistant" and content_text(message).startswith(SUMMARY_PREFIX.rstrip())


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


class BoundedPrompts:
    """`build_prompt` for PassContext: prompts within `limit_bytes`; remembers what each bounded prompt left out."""

    def __init__(self, limit_bytes: int) -> None:
        self.limit_bytes = limit_bytes
        self.full: dict[str, str] = {}  # bounded prompt -> the prompt of the whole span

    def __call__(self, humans: Sequence[Message], messages: Sequence[Message]) -> str:
        full = build_summary_prompt(humans, messages)
        if len(full.encode("utf-8")) <= self.limit_bytes or not messages:
            return full
        units = _units(messages)
        lead = 0
        while lead < len(units) and _is_summary(units[lead][0]):
            lead += 1
        budget = self.limit_bytes - sum(_size(u) for u in units[:lead])
        newest: list[list[Message]] = []
        for unit in reversed(units[lead:]):
            if _size(unit) > budget:
                break
            newest.insert(0, unit)
            budget -= _size(unit)
        if not lead and not newest and not humans:  # a prompt needs something: the newest step, whatever its size
            newest = units[-1:]
        prompt = build_summary_prompt(humans, [m for u in units[:lead] + newest for m in u])
        if prompt != full:
            self.full[prompt] = full
        return prompt

    def with_ledger(self, prompt: str, summary: str) -> str:
        """The model's summary of a bounded prompt, with the ledger of the whole span it replaces."""
        full = self.full.get(prompt)
        if full is None:
            return summary
        ledger = _cut(ledger_for(full, summary), self.limit_bytes // LEDGER_SHARE)
        return f"{summary.rstrip()}\n\n{ledger}" if ledger else summary


def bounded(gen: PassGen, prompts: BoundedPrompts) -> PassGen:
    """Drive `gen` (whose context builds prompts with `prompts`), appending each bounded prompt's ledger to the
    summary the model returns for it; failures pass through unchanged."""
    batch = next(gen, None)
    while batch is not None:
        outcomes: list[Outcome] = yield Batch(batch.stage, batch.prompts)
        answered = [prompts.with_ledger(p, o) if isinstance(o, str) else o
                    for p, o in zip(batch.prompts, outcomes, strict=False)]
        try:
            batch = gen.send(answered)
        except StopIteration:
            return
