"""Writing one compaction summary: chunking, split-turn prefix, audit, one retry, fail closed.

Calls are bounded: at most MAX_SUMMARY_CHUNKS partial summaries plus one merge, one split-turn prefix call,
and one retry of each after a failed audit. A summarizer exception is never retried here (no duplicate
attempt, fact 34): retry policy belongs to the callable (summarizer.fallback.retry_call). Nothing here
touches the view; the caller decides what to do with the text.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from summarizer.audit import audit_summary, enforced_identifiers, structure_fallback
from summarizer.compaction_prompt import build_compaction_prompt, build_split_turn_prompt, render_messages
from summarizer.cutpoints import prune_history_for_context_share, split_messages_by_token_share
from summarizer.identifiers import extract_identifiers
from summarizer.truncate import tool_result_text

__all__ = ["SummaryOptions", "SummaryOutcome", "write_summary", "has_real_content", "NO_PRIOR_HISTORY",
           "MAX_SUMMARY_CHUNKS", "REAL_TOOL_RESULT_ASK_DISTANCE", "SPLIT_TURN_SEPARATOR"]

Message = dict[str, Any]
MAX_SUMMARY_CHUNKS = 8
REAL_TOOL_RESULT_ASK_DISTANCE = 20  # a tool result counts as real history only near a user ask (fact 47)
NO_PRIOR_HISTORY = "No prior history."
SPLIT_TURN_SEPARATOR = "\n\n---\n\n## Turn in progress (its later part is kept verbatim)\n"


@dataclass(frozen=True)
class SummaryOptions:
    instructions: str | None = None
    identifier_policy: str = "strict"
    identifier_instructions: str = ""
    summary_budget_tokens: int | None = None
    chunk_tokens: int = 64_000
    max_message_chars: int = 24_000


@dataclass
class SummaryOutcome:
    text: str | None
    calls: int = 0
    error: str | None = None
    audit: list[str] = field(default_factory=list)
    identifiers: list[str] = field(default_factory=list)
    omitted_messages: int = 0


def _text(message: Message) -> str:
    return tool_result_text(message.get("content"))


def has_real_content(messages: Sequence[Message], preceding: Sequence[Message] = ()) -> bool:
    """True when there is something worth a summary call (fact 47): a user ask or assistant prose, or a tool
    result within 20 messages of a meaningful user ask (which may sit in `preceding`, before the span).
    Tool-call-only and reasoning-only assistants, and blank user messages, are not real."""
    last_ask = None
    for index, message in enumerate([*preceding, *messages]):
        role, text = message.get("role"), _text(message).strip()
        if role == "user" and text:
            last_ask = index
        if index < len(preceding):
            continue
        if role in ("user", "assistant") and text:
            return True
        if role == "tool" and last_ask is not None and index - last_ask <= REAL_TOOL_RESULT_ASK_DISTANCE:
            return True
    return False


def _latest_ask(messages: Sequence[Message]) -> str | None:
    for message in reversed(messages):
        if message.get("role") == "user" and _text(message).strip():
            return _text(message)
    return None


class _Writer:
    def __init__(self, summarize: Callable[[str], str], opts: SummaryOptions,
                 measure: Callable[[Message], int]) -> None:
        self.summarize, self.opts, self.measure = summarize, opts, measure
        self.calls = 0
        self.partials: list[str] | None = None  # chunk summaries are reused by the retry; only the merge reruns

    def call(self, prompt: str) -> str:
        self.calls += 1
        out = self.summarize(prompt)
        if not isinstance(out, str) or not out.strip():
            raise ValueError("the summarizer returned no text")
        return out.strip()

    def prompt(self, span: Sequence[Message], previous: str | Sequence[str] | None, missing: Sequence[str]) -> str:
        o = self.opts
        return build_compaction_prompt(span, previous_summary=previous, instructions=o.instructions,
                                       identifier_policy=o.identifier_policy,
                                       identifier_instructions=o.identifier_instructions, missing=missing,
                                       summary_budget_tokens=o.summary_budget_tokens,
                                       max_message_chars=o.max_message_chars)

    def main(self, span: Sequence[Message], previous: str | None, missing: Sequence[str]) -> str:
        """One call for a span that fits a call, else partial summaries merged by one more call."""
        if not has_real_content(span):
            return previous or structure_fallback(NO_PRIOR_HISTORY, identifier_policy="off")
        sizes = [self.measure(m) for m in span]
        if sum(sizes) <= self.opts.chunk_tokens:
            return self.call(self.prompt(span, previous, missing))
        if self.partials is None:
            parts = -(-sum(sizes) // self.opts.chunk_tokens)
            chunks = split_messages_by_token_share(span, parts, tokens=sizes)
            self.partials = [self.call(self.prompt(chunk, None, ())) for chunk in chunks]
        return self.call(self.prompt([], [p for p in [previous, *self.partials] if p], missing))

    def prefix(self, prefix: Sequence[Message], missing: Sequence[str]) -> str:
        prompt = build_split_turn_prompt(prefix, instructions=self.opts.instructions,
                                         max_message_chars=self.opts.max_message_chars)
        if missing:
            prompt += "\n\nInclude each of these identifiers exactly as written:\n" + "\n".join(f"- {m}" for m in missing)
        return self.call(prompt)


def _bounded_span(span: Sequence[Message], opts: SummaryOptions,
                  measure: Callable[[Message], int]) -> tuple[list[Message], int]:
    """Drop the oldest messages beyond MAX_SUMMARY_CHUNKS calls' worth (pairs kept whole); report how many."""
    limit = opts.chunk_tokens * MAX_SUMMARY_CHUNKS
    if sum(measure(m) for m in span) <= limit:
        return list(span), 0
    pruned = prune_history_for_context_share(span, limit, 1.0, measure=measure)
    return pruned.messages, len(pruned.dropped_messages)


def write_summary(span: Sequence[Message], *, summarize: Callable[[str], str], opts: SummaryOptions,
                  measure: Callable[[Message], int], previous_summary: str | None = None,
                  prefix: Sequence[Message] = ()) -> SummaryOutcome:
    """Summarize `span` (plus the previous summary, re-distilled) and the split-turn `prefix`, audited.

    Returns the text, or `error` with the reason when the summarizer failed or the audit failed twice.
    """
    span, omitted = _bounded_span(span, opts, measure)
    seen = render_messages([*span, *prefix], max_message_chars=opts.max_message_chars)
    identifiers = enforced_identifiers(extract_identifiers(seen)) if opts.identifier_policy == "strict" else []
    ask = _latest_ask([*span, *prefix])
    writer = _Writer(summarize, opts, measure)
    outcome = SummaryOutcome(text=None, identifiers=identifiers, omitted_messages=omitted)
    missing: list[str] = []
    for _attempt in range(2):  # the first try and one retry naming what was missing
        try:
            text = _compose(writer, span, prefix, previous_summary, missing, omitted)
        except Exception as exc:  # a summarizer failure fails the compaction closed, never retried here
            outcome.calls, outcome.error = writer.calls, f"summarizer error: {exc}"
            return outcome
        result = audit_summary(text, identifiers=identifiers, latest_ask=ask,
                               identifier_policy=opts.identifier_policy)
        outcome.audit.extend(result.problems)
        if result.ok:
            outcome.text, outcome.calls = text, writer.calls
            return outcome
        missing = result.missing_identifiers
    outcome.calls = writer.calls
    outcome.error = "summary audit failed twice: " + "; ".join(outcome.audit[-len(result.problems):])
    return outcome


def _compose(writer: _Writer, span: Sequence[Message], prefix: Sequence[Message], previous: str | None,
             missing: Sequence[str], omitted: int) -> str:
    main = structure_fallback(writer.main(span, previous, missing), identifier_policy=writer.opts.identifier_policy)
    if omitted:
        main += f"\n\n(Note: {omitted} older messages did not fit the summarizer and were omitted.)"
    if not prefix:
        return main
    return main + SPLIT_TURN_SEPARATOR + writer.prefix(prefix, missing)
