"""Step b of the window fit: summarize everything before the cut, keep the recent tail verbatim (§3.2 b).

The view before: [system?] [previous summary message?] older ... | kept tail. The view after:
[system?] [ONE user summary message] kept tail. A previous summary message is not kept: its text is fed to
the summarizer with the newly compacted messages and re-distilled into one rolling summary (never an
ever-growing concatenation). A split turn keeps its user message verbatim and summarizes only the turn's
earlier assistant/tool messages. When the kept tail starts with a user message, that message is carried inside
the summary message as a second part (see prompt.summary_message) so the view stays strictly
parseable. Lineage is tracked throughout: every output message lists the input indices it stands for.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from summarizer.chain.nodes import merge_lineage
from summarizer.compact.cutpoints import CutPoint, find_cut_point, is_valid_cut_point, turn_start_index
from summarizer.compact.prompt import parse_summary_message, summary_message
from summarizer.compact.summary_writer import SummaryOptions, write_summary

__all__ = ["CutResult", "window_cut", "fitted_options", "system_head", "MIN_SUMMARY_BUDGET_TOKENS",
           "MAX_SUMMARY_SHARE_OF_REPLACED", "SUMMARY_MESSAGE_OVERHEAD_TOKENS"]

Message = dict[str, Any]
MIN_SUMMARY_BUDGET_TOKENS = 128
MAX_SUMMARY_SHARE_OF_REPLACED = 0.5  # a summary at most half the size of what it replaces: the view shrinks
SUMMARY_MESSAGE_OVERHEAD_TOKENS = 64  # the intro sentence, the <summary> tags and the message framing


@dataclass
class CutResult:
    messages: list[Message]
    lineage: list[list[int]]
    changed: bool = False
    calls: int = 0
    summary: str | None = None
    covered: list[int] = field(default_factory=list)
    error: str | None = None
    audit: list[str] = field(default_factory=list)
    cut: CutPoint | None = None
    first_kept: int = 0  # index in the returned view of the first kept tail message


def system_head(view: Sequence[Message]) -> int:
    """How many leading messages are the system prompt (0 or 1): they are never compacted."""
    return 1 if view and view[0].get("role") == "system" else 0


def _unwrap_previous(view: list[Message], lineage: list[list[int]], head: int
                     ) -> tuple[list[Message], list[list[int]], str | None, list[int]]:
    """Take a previous summary message out of the view: (view, lineage, its text, the lineage it covered)."""
    if head >= len(view):
        return view, lineage, None, []
    text, kept_user = parse_summary_message(view[head])
    if text is None:
        return view, lineage, None, []
    if kept_user is not None:  # the merged user stays as a plain user message; the summary's lineage goes with it
        return view[:head] + [kept_user] + view[head + 1:], lineage, text, []
    return view[:head] + view[head + 1:], lineage[:head] + lineage[head + 1:], text, list(lineage[head])


def _previous_text(given: str | None, found: str | None) -> str | None:
    """The earlier summary to re-distill: the caller's and the one taken out of the view (both when they
    differ: the view's message is removed, so its text must not be dropped unread)."""
    texts = [t.strip() for t in (found, given) if t and t.strip()]
    return "\n\n".join(dict.fromkeys(texts)) or None


def _layout(work: list[Message], cut: CutPoint, head: int) -> tuple[list[int], list[int], list[int]]:
    """(span, turn prefix, kept) as index lists. The user message of a split turn is kept verbatim (it opens
    the kept part, so the newest ask is never summarized away); only its assistant/tool prefix is summarized."""
    if not cut.is_split_turn:
        return list(range(head, cut.first_kept)), [], list(range(cut.first_kept, len(work)))
    return (list(range(head, cut.turn_start)), list(range(cut.turn_start + 1, cut.first_kept)),
            [cut.turn_start, *range(cut.first_kept, len(work))])


def _choose_cut(work: list[Message], measure: Callable[[Message], int], keep_recent_tokens: int, head: int,
                hard: bool, must_shrink: bool) -> tuple[CutPoint, tuple[list[int], list[int], list[int]]]:
    """The cut by the keep budget; when that leaves nothing to summarize (one long newest turn), the first
    later valid cut point that does: the view must shrink, even if the tail ends up under the budget."""
    if hard:
        cut = CutPoint(first_kept=len(work))
        return cut, _layout(work, cut, head)
    sizes = [measure(m) for m in work]
    cut = find_cut_point(work, keep_recent_tokens=keep_recent_tokens, start=head, tokens=sizes)
    if cut.is_split_turn and sizes[cut.turn_start] > 0:
        # The split turn's user message stays verbatim too, so it spends the keep budget: cut again with what
        # it leaves (a huge task message would otherwise push the kept part far past the budget).
        cut = find_cut_point(work, keep_recent_tokens=max(keep_recent_tokens - sizes[cut.turn_start], 0),
                             start=head, tokens=sizes)
    layout = _layout(work, cut, head)
    for later in range(cut.first_kept + 1, len(work) if must_shrink else 0):
        if layout[0] or layout[1]:
            break
        if is_valid_cut_point(work[later]):
            turn = turn_start_index(work, later, head)
            cut = CutPoint(first_kept=later, turn_start=turn, is_split_turn=turn != -1 and turn != later)
            layout = _layout(work, cut, head)
    return cut, layout


def fitted_options(opts: SummaryOptions, work: list[Message], head: int, replaced_ix: Sequence[int],
                   kept_ix: Sequence[int], measure: Callable[[Message], int], previous: str | None) -> SummaryOptions:
    """`opts` with the summary budget fitted to this cut: at most half of what the summary replaces (so the
    view shrinks) and, for a window fit, at most the room the system message and the kept tail leave."""
    replaced = sum(measure(work[i]) for i in replaced_ix)
    replaced += measure({"role": "user", "content": previous}) if previous else 0
    budgets = [max(int(replaced * MAX_SUMMARY_SHARE_OF_REPLACED), MIN_SUMMARY_BUDGET_TOKENS)]
    if opts.summary_budget_tokens:
        budgets.append(opts.summary_budget_tokens)
    if opts.view_budget_tokens is not None:
        taken = sum(measure(work[i]) for i in [*range(head), *kept_ix]) + SUMMARY_MESSAGE_OVERHEAD_TOKENS
        budgets.append(max(opts.view_budget_tokens - taken, MIN_SUMMARY_BUDGET_TOKENS))
    return replace(opts, summary_budget_tokens=min(budgets))


def window_cut(view: Sequence[Message], lineage: Sequence[Sequence[int]], *, keep_recent_tokens: int,
               summarize: Callable[[str], str], opts: SummaryOptions, measure: Callable[[Message], int],
               previous_summary: str | None = None, hard: bool = False, must_shrink: bool = False) -> CutResult:
    """Compact `view` before its cut point (or all of it after the system message when `hard`).
    `must_shrink` (window fit): when the keep budget leaves nothing to summarize, cut later instead."""
    head = system_head(view)
    work, lin, found, prior = _unwrap_previous(list(view), [list(x) for x in lineage], head)
    previous = _previous_text(previous_summary, found)
    cut, (span_ix, prefix_ix, kept_ix) = _choose_cut(work, measure, keep_recent_tokens, head, hard,
                                                       must_shrink)
    unchanged = CutResult(messages=list(view), lineage=[list(x) for x in lineage], cut=cut, first_kept=head)
    if not span_ix and not prefix_ix and not (hard and previous):
        return unchanged
    # The summarizer sees the split turn's user message as context, though the view keeps it verbatim.
    prefix_ctx = [work[cut.turn_start], *(work[i] for i in prefix_ix)] if prefix_ix else []
    opts = fitted_options(opts, work, head, [*span_ix, *prefix_ix], kept_ix, measure, previous)
    outcome = write_summary([work[i] for i in span_ix], summarize=summarize, opts=opts, measure=measure,
                            previous_summary=previous, prefix=prefix_ctx)
    if outcome.error or outcome.text is None:
        unchanged.calls, unchanged.error, unchanged.audit = outcome.calls, outcome.error, outcome.audit
        return unchanged
    covered = list(merge_lineage(prior, *(lin[i] for i in span_ix), *(lin[i] for i in prefix_ix)))
    kept, kept_lin = [work[i] for i in kept_ix], [lin[i] for i in kept_ix]
    if kept and kept[0].get("role") == "user":
        message = summary_message(outcome.text, kept_user=kept[0])
        message_lin = list(merge_lineage(covered, kept_lin[0]))
        kept, kept_lin = kept[1:], kept_lin[1:]
    else:
        message, message_lin = summary_message(outcome.text), covered
    return CutResult(messages=[*work[:head], message, *kept], lineage=[*lin[:head], message_lin, *kept_lin],
                     changed=True, calls=outcome.calls, summary=outcome.text, covered=covered,
                     audit=outcome.audit, cut=cut, first_kept=head + 1)
