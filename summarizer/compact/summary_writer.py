"""Writing one compaction summary: chunking, split-turn prefix, audit, retries, deterministic suffix, fail closed.

Calls are bounded: at most MAX_SUMMARY_CHUNKS partial summaries plus one merge, one split-turn prefix call,
and `quality_guard_max_retries` retries (default 1, at most 3) of each after a failed audit. A summarizer
exception is never retried here (no duplicate attempt, fact 34): retry policy belongs to the callable
(summarizer.recovery.fallback.retry_call). Nothing here touches the view; the caller decides what to do with the text.

Size. The prompt states a budget (summary_budget_tokens, from the room left in the window). It is raised to
hold every identifier the strict audit will require (within SUMMARY_BUDGET_CAP_TOKENS): a summary that is
rejected for a missing hash helps nobody. With a split turn the budget is shared between the main summary and
the prefix summary. The summary ends with a deterministic suffix (summarizer.compact.summary_suffix: recent turns
quoted verbatim when asked, tool failures, files read and modified) and the whole is capped at 16,000 chars.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from summarizer.compact.audit import audit_summary, enforced_identifiers, structure_fallback
from summarizer.compact.cutpoints import prune_history_for_context_share, split_messages_by_token_share
from summarizer.compact.prompt import (
    CHARS_PER_TOKEN_ESTIMATE,
    MAX_LATEST_ASK_CHARS,
    build_compaction_prompt,
    build_split_turn_prompt,
    render_messages,
)
from summarizer.compact.summary_suffix import (
    MAX_COMPACTION_SUMMARY_CHARS,
    assemble_suffix,
    cap_preserving_suffix,
    collect_tool_failures,
    compute_file_lists,
    compute_file_operations,
    format_file_operations,
    format_preserved_turns_section,
    format_tool_failures_section,
    resolve_quality_guard_max_retries,
    split_preserved_recent_turns,
)
from summarizer.compact.truncate import tool_result_text
from summarizer.identifiers import extract_identifiers

__all__ = ["SummaryOptions", "SummaryOutcome", "write_summary", "has_real_content", "identifier_budget_tokens",
           "summary_suffix", "NO_PRIOR_HISTORY", "MAX_SUMMARY_CHUNKS", "REAL_TOOL_RESULT_ASK_DISTANCE",
           "SPLIT_TURN_SEPARATOR", "SUMMARY_BUDGET_CAP_TOKENS"]

Message = dict[str, Any]
MAX_SUMMARY_CHUNKS = 8
REAL_TOOL_RESULT_ASK_DISTANCE = 20  # a tool result counts as real history only near a user ask (fact 47)
NO_PRIOR_HISTORY = "No prior history."
SPLIT_TURN_SEPARATOR = "\n\n---\n\n## Turn in progress (its later part is kept verbatim)\n"
# The body may not pass the 16,000-char cap, so no budget asks for more than it can hold.
SUMMARY_BUDGET_CAP_TOKENS = int(MAX_COMPACTION_SUMMARY_CHARS / CHARS_PER_TOKEN_ESTIMATE)
SKELETON_CHARS = 400  # headings, "None." lines and labels of an empty checkpoint
IDENTIFIER_LINE_OVERHEAD_CHARS = 3  # "- " and the newline around a listed identifier
PREFIX_SHARE_MIN, PREFIX_SHARE_MAX = 0.3, 0.7  # the split-turn prefix's share of the budget, by its size


@dataclass(frozen=True)
class SummaryOptions:
    instructions: str | None = None
    identifier_policy: str = "strict"
    identifier_instructions: str = ""
    summary_budget_tokens: int | None = None
    # Token budget of the whole compacted view (window fit): the summary gets what the system message and the
    # kept tail leave of it (see window_cut), so a summary never makes the view overflow by itself.
    view_budget_tokens: int | None = None
    chunk_tokens: int = 64_000
    max_message_chars: int = 24_000
    # Turns quoted verbatim in the summary (fact 42). Off here: our kept tail already keeps recent turns
    # verbatim in the view itself; a caller asks for it (e.g. a hard checkpoint that keeps no tail).
    recent_turns_preserve: int = 0
    quality_guard_max_retries: int | None = None  # None → 1; clamped to 0..3 (fact 42)


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


def identifier_budget_tokens(identifiers: Sequence[str], *, ask_chars: int = 0) -> int:
    """Tokens a checkpoint needs to list `identifiers` verbatim next to its headings and the latest ask."""
    chars = SKELETON_CHARS + ask_chars + sum(len(i) + IDENTIFIER_LINE_OVERHEAD_CHARS for i in identifiers)
    return math.ceil(chars / CHARS_PER_TOKEN_ESTIMATE)


def summary_suffix(messages: Sequence[Message], preserved: Sequence[Message] = ()) -> str:
    """The deterministic tail of a summary: preserved turns, tool failures, files read / modified."""
    read_files, modified_files = compute_file_lists(compute_file_operations(messages))
    return assemble_suffix([format_preserved_turns_section(preserved),
                            format_tool_failures_section(collect_tool_failures(messages)),
                            format_file_operations(read_files, modified_files)])


class _Writer:
    def __init__(self, summarize: Callable[[str], str], opts: SummaryOptions, measure: Callable[[Message], int],
                 budgets: tuple[int | None, int | None]) -> None:
        self.summarize, self.opts, self.measure = summarize, opts, measure
        self.main_budget, self.prefix_budget = budgets
        self.calls = 0
        self.partials: list[str] | None = None  # chunk summaries are reused by the retry; only the merge reruns

    def call(self, prompt: str) -> str:
        self.calls += 1
        out = self.summarize(prompt)
        if not isinstance(out, str) or not out.strip():
            raise ValueError("the summarizer returned no text")
        return out.strip()

    def prompt(self, span: Sequence[Message], previous: str | Sequence[str] | None, missing: Sequence[str],
               ask: str | None) -> str:
        o = self.opts
        return build_compaction_prompt(span, previous_summary=previous, instructions=o.instructions,
                                       identifier_policy=o.identifier_policy,
                                       identifier_instructions=o.identifier_instructions, missing=missing,
                                       summary_budget_tokens=self.main_budget,
                                       max_message_chars=o.max_message_chars, latest_ask=ask)

    def main(self, span: Sequence[Message], previous: str | None, missing: Sequence[str]) -> str:
        """One call for a span that fits a call, else partial summaries merged by one more call."""
        if not has_real_content(span):
            return previous or structure_fallback(NO_PRIOR_HISTORY, identifier_policy="off")
        sizes = [self.measure(m) for m in span]
        if sum(sizes) <= self.opts.chunk_tokens:
            return self.call(self.prompt(span, previous, missing, _latest_ask(span)))
        if self.partials is None:
            parts = -(-sum(sizes) // self.opts.chunk_tokens)
            chunks = split_messages_by_token_share(span, parts, tokens=sizes)
            self.partials = [self.call(self.prompt(chunk, None, (), _latest_ask(chunk))) for chunk in chunks]
        return self.call(self.prompt([], [p for p in [previous, *self.partials] if p], missing, _latest_ask(span)))

    def prefix(self, prefix: Sequence[Message], missing: Sequence[str], carried_tokens: int = 0) -> str:
        budget = None if self.prefix_budget is None else self.prefix_budget + carried_tokens
        return self.call(build_split_turn_prompt(prefix, instructions=self.opts.instructions,
                                                 max_message_chars=self.opts.max_message_chars,
                                                 summary_budget_tokens=budget, missing=missing))


def _bounded_span(span: Sequence[Message], opts: SummaryOptions,
                  measure: Callable[[Message], int]) -> tuple[list[Message], int]:
    """Drop the oldest messages beyond MAX_SUMMARY_CHUNKS calls' worth (pairs kept whole); report how many."""
    limit = opts.chunk_tokens * MAX_SUMMARY_CHUNKS
    if sum(measure(m) for m in span) <= limit:
        return list(span), 0
    pruned = prune_history_for_context_share(span, limit, 1.0, measure=measure)
    return pruned.messages, len(pruned.dropped_messages)


def _required(text: str, opts: SummaryOptions) -> list[str]:
    """The identifiers of `text` the strict audit will ask for ([] under the other policies)."""
    return enforced_identifiers(extract_identifiers(text)) if opts.identifier_policy == "strict" else []


def _budget(base: int, identifiers: Sequence[str], ask: str | None, cap_tokens: int) -> int:
    """The stated budget raised to hold the identifiers and the ask, within `cap_tokens`."""
    need = identifier_budget_tokens(identifiers, ask_chars=min(len(ask or ""), MAX_LATEST_ASK_CHARS))
    return max(1, min(max(base, need), cap_tokens, SUMMARY_BUDGET_CAP_TOKENS))


def _budgets(span: Sequence[Message], prefix: Sequence[Message], previous: str | None, opts: SummaryOptions,
             measure: Callable[[Message], int], suffix_chars: int) -> tuple[int | None, int | None]:
    """(main budget, split-turn prefix budget) in tokens; None when the caller stated no budget."""
    base = opts.summary_budget_tokens
    if base is None:
        return None, None
    cap = max(int((MAX_COMPACTION_SUMMARY_CHARS - suffix_chars) / CHARS_PER_TOKEN_ESTIMATE), 1)

    def render(ms: Sequence[Message]) -> str:
        return render_messages(ms, max_message_chars=opts.max_message_chars)

    main_ids = _required(render(span), opts)  # the previous summary's own identifiers are not audited
    if not prefix:
        return _budget(base, main_ids, _latest_ask(span), cap), None
    span_tokens, prefix_tokens = sum(measure(m) for m in span), sum(measure(m) for m in prefix)
    share = min(max(prefix_tokens / max(span_tokens + prefix_tokens, 1), PREFIX_SHARE_MIN), PREFIX_SHARE_MAX)
    main = _budget(int(base * (1 - share)), main_ids, _latest_ask(span), int(cap * (1 - share)))
    return main, _budget(int(base * share), _required(render(prefix), opts), _latest_ask(prefix), int(cap * share))


def write_summary(span: Sequence[Message], *, summarize: Callable[[str], str], opts: SummaryOptions,
                  measure: Callable[[Message], int], previous_summary: str | None = None,
                  prefix: Sequence[Message] = ()) -> SummaryOutcome:
    """Summarize `span` (plus the previous summary, re-distilled) and the split-turn `prefix`, audited, with
    the deterministic suffix appended and the whole capped at 16,000 chars.

    Returns the text, or `error` with the reason when the summarizer failed or every audit failed.
    """
    span, omitted = _bounded_span(span, opts, measure)
    span, preserved = split_preserved_recent_turns(span, opts.recent_turns_preserve)
    suffix = summary_suffix([*span, *preserved, *prefix], preserved)
    seen = render_messages([*span, *prefix], max_message_chars=opts.max_message_chars)
    identifiers = _required(seen, opts)
    ask = _latest_ask([*span, *prefix])
    writer = _Writer(summarize, opts, measure, _budgets(span, prefix, previous_summary, opts, measure, len(suffix)))
    outcome = SummaryOutcome(text=None, identifiers=identifiers, omitted_messages=omitted)
    attempts = 1 + resolve_quality_guard_max_retries(opts.quality_guard_max_retries)
    missing: list[str] = []
    for _attempt in range(attempts):  # the first try, then retries naming what was missing
        try:
            body = _compose(writer, span, prefix, previous_summary, missing, omitted)
        except Exception as exc:  # a summarizer failure fails the compaction closed, never retried here
            outcome.calls, outcome.error = writer.calls, f"summarizer error: {exc}"
            return outcome
        text = cap_preserving_suffix(body, suffix)
        result = audit_summary(text, identifiers=identifiers, latest_ask=ask,
                               identifier_policy=opts.identifier_policy)
        outcome.audit.extend(result.problems)
        if result.ok:
            outcome.text, outcome.calls = text, writer.calls
            return outcome
        missing = result.missing_identifiers
    outcome.calls = writer.calls
    times = {1: "once", 2: "twice"}.get(attempts, f"{attempts} times")
    outcome.error = f"summary audit failed {times}: " + "; ".join(outcome.audit[-len(result.problems):])
    return outcome


def _compose(writer: _Writer, span: Sequence[Message], prefix: Sequence[Message], previous: str | None,
             missing: Sequence[str], omitted: int) -> str:
    main = structure_fallback(writer.main(span, previous, missing), identifier_policy=writer.opts.identifier_policy)
    if omitted:
        main += f"\n\n(Note: {omitted} older messages did not fit the summarizer and were omitted.)"
    if not prefix:
        return main
    carried = 0
    if SPLIT_TURN_SEPARATOR in main:
        # The previous checkpoint, kept as it was, ends in an earlier part of a turn: that part goes into the
        # new part's prompt as what came before, so parts merge instead of stacking their headings. It had
        # its room in the view already, so the merged part may take that room too.
        main, older = main.split(SPLIT_TURN_SEPARATOR, 1)
        earlier: Message = {"role": "user", "content": f"<summary>\n{older.strip()}\n</summary>"}
        prefix, carried = [earlier, *prefix], writer.measure(earlier)
    return main + SPLIT_TURN_SEPARATOR + writer.prefix(prefix, missing, carried)
