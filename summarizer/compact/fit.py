"""Fitting a view into the model's window before a call, and manual compaction (compaction.md §3, §5).

Theory of operation. For a known window W and reserved output R (the model's max output capped at 20% of
W; a given reserve is capped at W/2), a view that fits W - R is returned unchanged (fitting is idempotent).
Otherwise, in this order, stopping as soon as it fits:
  a. re-run the PentAGI chain summarizer with the strict "restore" profile (bytes, no window knowledge);
  b. window cut: summarize everything before the cut into one rolling summary, keep ~keep_recent_tokens
     (never more than W/2) verbatim (summarizer.compact.window_cut);
  c. truncate oversized tool results in the kept tail head + tail (summarizer.compact.truncate);
  d. still too big: raise ContextTooLarge with the sizes. Nothing loops.
One shortcut (acceptance fact 8): when truncating oversized tool results alone makes the view fit, only c
runs: no model call, and less is lost than by summarizing. `plan_fit` makes that decision visible.
Every returned view goes through assert_valid_view. A failed or rejected summary never replaces history:
the view reached before that step is returned with `.error` set (fail closed; `raise_for_error()` turns it
into CompactionFailed for callers that prefer exceptions).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from summarizer.chain.nodes import merge_lineage
from summarizer.compact.errors import CompactionFailed, ContextTooLarge
from summarizer.compact.plan import (
    GIVEN_RESERVE_MAX_WINDOW_SHARE,
    RESERVE_MAX_WINDOW_SHARE,
    FitPlan,
    count_functions,
    effective_reserve,
    plan_fit,
    should_compact,
)
from summarizer.compact.prompt import resolve_instructions
from summarizer.compact.providers import get_compaction_provider, with_compaction_provider
from summarizer.compact.summary_writer import SummaryOptions
from summarizer.compact.truncate import truncate_tool_results
from summarizer.compact.validate_view import assert_valid_view
from summarizer.compact.window_cut import CutResult, system_head, window_cut

__all__ = ["FitResult", "FitPlan", "fit_to_window", "compact_now", "plan_fit", "effective_reserve", "should_compact",
           "overflow_compactor", "ContextTooLarge", "CompactionFailed", "DEFAULT_KEEP_RECENT_TOKENS",
           "RESERVE_MAX_WINDOW_SHARE", "GIVEN_RESERVE_MAX_WINDOW_SHARE", "STEP_RESTORE", "STEP_WINDOW_CUT",
           "STEP_TRUNCATE", "MANUAL_SUMMARY_BUDGET_TOKENS", "UNKNOWN_WINDOW_CHUNK_TOKENS"]

Message = dict[str, Any]
DEFAULT_KEEP_RECENT_TOKENS = 20_000
STEP_RESTORE, STEP_WINDOW_CUT, STEP_TRUNCATE = "restore", "window_cut", "truncate"
SUMMARY_MIN_BUDGET_TOKENS = 256
SUMMARY_MAX_BUDGET_TOKENS = 8_000
# A window cut's summary leaves 1/N of the keep budget free, not all of it: the kept tail (whole turns) is usually
# far below its budget, and the checkpoint's room decides how much of the history survives (issue 23: at 8k a
# checkpoint of 6 KB dropped the CA name and the error the agent kept hitting). The summary is still capped at
# the room the actual tail leaves (window_cut.fitted_options), so the view always fits the target.
SUMMARY_LEAVES_KEEP_SHARE = 2
MANUAL_SUMMARY_BUDGET_TOKENS = 4_000
UNKNOWN_WINDOW_CHUNK_TOKENS = 32_000  # per-call span for manual compaction when the window is unknown
NO_SUMMARIZER_ERROR = "compaction cancelled: no compaction model or provider is configured"


@dataclass
class FitResult:
    """The fitted view and how it was reached. `lineage[i]` lists the input indices output message i stands for."""

    messages: list[Message]
    tokens: int
    compacted: bool = False
    calls: int = 0
    steps: list[str] = field(default_factory=list)
    summary: str | None = None
    covered: list[int] = field(default_factory=list)
    lineage: list[list[int]] = field(default_factory=list)
    tokens_before: int = 0
    budget_tokens: int | None = None
    reserve_tokens: int | None = None
    error: str | None = None
    audit: list[str] = field(default_factory=list)
    truncated: list[int] = field(default_factory=list)  # output indices of truncated tool results
    plan: str = "fits"

    @property
    def fits(self) -> bool:
        return self.budget_tokens is None or self.tokens <= self.budget_tokens

    def raise_for_error(self) -> FitResult:
        if self.error:
            raise CompactionFailed(self.error)
        return self


def _check_inputs(messages: Any, window_tokens: Any) -> None:
    if not isinstance(window_tokens, int) or isinstance(window_tokens, bool) or window_tokens <= 0:
        raise ValueError(f"window_tokens must be a positive integer, got {window_tokens!r}")
    assert_valid_view(messages)


def _restore(view: list[Message], lineage: list[list[int]], summarize: Callable[[str], str], config: Any
             ) -> tuple[list[Message], list[list[int]], int, str | None]:
    from summarizer.passes.summarize import summarize_chain
    from summarizer.settings.config import SummarizerConfig  # lazy: the engine is only needed when step a runs
    result = summarize_chain(view, config or SummarizerConfig.restore(), summarize)
    if result.error:
        return view, lineage, result.calls, f"restore profile failed: {result.error}"
    try:
        assert_valid_view(result.messages)
    except ValueError as exc:  # a structurally bad summary never replaces the view
        return view, lineage, result.calls, f"restore profile produced an invalid view: {exc}"
    merged = [list(merge_lineage(*(lineage[i] for i in lin))) for lin in result.lineage]
    return result.messages, merged, result.calls, None


class _Fit:
    """Mutable state of one fit: the current view, its lineage and everything reported in the FitResult."""

    def __init__(self, messages: Sequence[Message], count: Callable[[Sequence[Message]], int], budget: int,
                 reserve: int) -> None:
        self.view = list(messages)
        self.lineage = [[i] for i in range(len(self.view))]
        self.count = count
        self.before = count(self.view)
        self.result = FitResult(messages=self.view, tokens=self.before, tokens_before=self.before,
                                budget_tokens=budget, reserve_tokens=reserve, lineage=self.lineage)

    def fits(self, target: float) -> bool:
        return self.count(self.view) <= target

    def apply_cut(self, cut: CutResult) -> None:
        self.result.calls += cut.calls
        self.result.audit.extend(cut.audit)
        if cut.error:
            self.result.error = cut.error
            return
        if cut.changed:
            self.view, self.lineage = cut.messages, cut.lineage
            self.result.steps.append(STEP_WINDOW_CUT)
            self.result.summary, self.result.covered = cut.summary, cut.covered

    def truncate(self, window_tokens: int, start: int, model: str | None) -> None:
        view, changed = truncate_tool_results(self.view, window_tokens=window_tokens, start=start, model=model)
        if changed:
            self.view = view
            self.result.truncated = changed
            self.result.steps.append(STEP_TRUNCATE)

    def finish(self) -> FitResult:
        assert_valid_view(self.view)
        r = self.result
        r.messages, r.lineage, r.tokens = self.view, self.lineage, self.count(self.view)
        r.compacted = bool(r.steps)
        return r


def fit_to_window(messages: Sequence[Message], *, window_tokens: int, summarize: Callable[[str], str] | None,
                  model: str | None = None, reserve_tokens: int | None = None,
                  keep_recent_tokens: int = DEFAULT_KEEP_RECENT_TOKENS, config: Any = None,
                  instructions: str | None = None, identifier_policy: str = "strict",
                  identifier_instructions: str = "", previous_summary: str | None = None,
                  tools: Sequence[dict[str, Any]] | None = None, force: bool = False,
                  observed_tokens: int | None = None, provider: str | None = None,
                  restore: bool = True) -> FitResult:
    """Return a view of `messages` that fits `window_tokens` minus the reserve (see the module docstring).

    `force` (overflow recovery) skips step a and compacts even when our count says the view fits;
    `restore=False` skips step a too (the window strategy has just run its own passes on this view);
    `observed_tokens` (the size a provider reported) scales our budget by how much our count underestimates.
    `provider` names a registered compaction provider tried before `summarize`.
    Raises ContextTooLarge when the irreducible part cannot fit; ValueError/InvalidView for bad input.
    """
    _check_inputs(messages, window_tokens)
    count, measure = count_functions(model, tools)
    reserve = effective_reserve(window_tokens, reserve_tokens, model)
    budget = window_tokens - reserve
    fit = _Fit(messages, count, budget, reserve)
    target = budget * fit.before / observed_tokens if observed_tokens and observed_tokens > fit.before else budget
    if fit.before <= target and not force:
        return fit.finish()
    plan = plan_fit(fit.view, window_tokens=window_tokens, reserve_tokens=reserve, model=model, tools=tools)
    fit.result.plan = plan.decision
    if plan.decision == "truncate_tool_results_only" and not force:
        fit.truncate(window_tokens, start=0, model=model)
        return fit.finish()
    summarize = _resolve_summarizer(summarize, provider)
    if summarize is None:
        fit.result.error = NO_SUMMARIZER_ERROR
        return fit.finish()
    if _hopeless(fit.view, window_tokens, target, model, measure):
        _raise_too_large(fit, messages, window_tokens, reserve, measure)  # before any model call: none can help
    if restore and not force:
        _step_restore(fit, summarize, config)
        if fit.fits(target):
            return fit.finish()
    cut = _step_window_cut(fit, window_tokens, target, keep_recent_tokens, summarize, measure,
                           SummaryOptions(instructions=resolve_instructions(instructions),
                                          identifier_policy=identifier_policy,
                                          identifier_instructions=identifier_instructions),
                           previous_summary)
    if fit.result.error:
        return fit.finish()  # fail closed: the view reached before the failed summary
    if not fit.fits(target):
        fit.truncate(window_tokens, start=cut.first_kept, model=model)
    if not fit.fits(target):
        _raise_too_large(fit, messages, window_tokens, reserve, measure)
    return fit.finish()


def _step_window_cut(fit: _Fit, window_tokens: int, target: float, keep_recent_tokens: int,
                     summarize: Callable[[str], str], measure: Callable[[Message], int], opts: SummaryOptions,
                     previous_summary: str | None) -> CutResult:
    """Step b: keep at most keep_recent_tokens, half the window and half of what the system message leaves;
    the summary gets the room between the kept tail and the target, leaving half the keep budget free."""
    head_tokens = fit.count(fit.view[:system_head(fit.view)])
    keep = max(0, min(keep_recent_tokens, window_tokens // 2, int(target - head_tokens) // 2))
    opts = replace(opts, chunk_tokens=max(window_tokens // 2, 1), view_budget_tokens=int(target),
                   summary_budget_tokens=_summary_budget(target - head_tokens - keep // SUMMARY_LEAVES_KEEP_SHARE))
    cut = window_cut(fit.view, fit.lineage, keep_recent_tokens=keep, summarize=summarize, opts=opts,
                     measure=measure, previous_summary=previous_summary, must_shrink=True)
    fit.apply_cut(cut)
    return cut


def _step_restore(fit: _Fit, summarize: Callable[[str], str], config: Any) -> None:
    view, lineage, calls, error = _restore(fit.view, fit.lineage, summarize, config)
    fit.result.calls += calls
    if error:
        fit.result.audit.append(error)
    elif view != fit.view:
        fit.view, fit.lineage = view, lineage
        fit.result.steps.append(STEP_RESTORE)


def _resolve_summarizer(summarize: Callable[[str], str] | None, provider: str | None
                        ) -> Callable[[str], str] | None:
    """The summarizer to use: a registered provider first (built-in as its fallback), else `summarize`.
    Neither → None: the compaction is cancelled (fact 48)."""
    if summarize is None:
        return get_compaction_provider(provider)
    return with_compaction_provider(provider, summarize)


def _summary_budget(available_tokens: float) -> int:
    return int(min(max(available_tokens, SUMMARY_MIN_BUDGET_TOKENS), SUMMARY_MAX_BUDGET_TOKENS))


def _hopeless(view: list[Message], window_tokens: int, target: float, model: str | None,
              measure: Callable[[Message], int]) -> bool:
    """True when no step can fit the view: what every step keeps (`_irreducible`: the system message, the newest
    user message, which a window cut quotes in its checkpoint, and the newest round), its tool results already
    truncated as step c would, leaves less than the smallest summary's room under `target`. Summarizing first
    would only spend model calls on the same refusal."""
    kept = [view[i] for i in sorted(_irreducible(view))]
    truncated, _ = truncate_tool_results(kept, window_tokens=window_tokens, model=model)
    return sum(measure(m) for m in truncated) + SUMMARY_MIN_BUDGET_TOKENS > target


def _irreducible(view: list[Message]) -> set[int]:
    """Indices no step may drop: the system message, the newest user message and the newest tool round (or
    message) after it."""
    users = [i for i, m in enumerate(view) if m.get("role") == "user"]
    last_round = max((i for i, m in enumerate(view) if m.get("role") != "tool"), default=0)
    keep = set(range(last_round, len(view)))
    if users:
        keep.add(users[-1])
    if view and view[0].get("role") == "system":
        keep.add(0)
    return keep


def _irreducible_tokens(view: list[Message], measure: Callable[[Message], int]) -> int:
    return sum(measure(view[i]) for i in _irreducible(view))


def _raise_too_large(fit: _Fit, messages: Sequence[Message], window_tokens: int, reserve: int,
                     measure: Callable[[Message], int]) -> None:
    summary = fit.result.summary
    error = ContextTooLarge(tokens=fit.count(fit.view), window_tokens=window_tokens, reserve_tokens=reserve,
                            irreducible_tokens=_irreducible_tokens(list(messages), measure),
                            summary_tokens=measure({"role": "user", "content": summary}) if summary else 0)
    error.partial = fit.finish()  # type: ignore[attr-defined]  # the best view reached, for the event record
    raise error


def compact_now(messages: Sequence[Message], *, summarize: Callable[[str], str] | None,
                instructions: str | None = None,
                keep_recent_tokens: int | None = None, model: str | None = None, identifier_policy: str = "strict",
                identifier_instructions: str = "", previous_summary: str | None = None,
                default_instructions: str | None = None, window_tokens: int | None = None,
                provider: str | None = None) -> FitResult:
    """Manual compaction ("Compact now", §5). With `keep_recent_tokens` the recent tail stays verbatim; without
    it (None or 0) this is a hard checkpoint: the view becomes the system message plus the summary, and later
    messages are appended after it. Instructions: manual > `default_instructions` (config) > none, blank
    skipped, 800 code points, wrapped as data (fact 38). Failures keep the old view (`.error`)."""
    assert_valid_view(messages)
    count, measure = count_functions(model, None)
    fit = _Fit(messages, count, budget=0, reserve=0)
    fit.result.budget_tokens = fit.result.reserve_tokens = None
    summarize = _resolve_summarizer(summarize, provider)
    if summarize is None:
        fit.result.error = NO_SUMMARIZER_ERROR
        return fit.finish()
    keep = int(keep_recent_tokens or 0)
    if window_tokens:
        keep = min(keep, window_tokens // 2)
    opts = SummaryOptions(instructions=resolve_instructions(instructions, default_instructions),
                          identifier_policy=identifier_policy, identifier_instructions=identifier_instructions,
                          chunk_tokens=(window_tokens // 2) if window_tokens else UNKNOWN_WINDOW_CHUNK_TOKENS,
                          summary_budget_tokens=MANUAL_SUMMARY_BUDGET_TOKENS)
    # The operator asked for a compaction: when the view is over the keep budget but the budget's cut leaves
    # nothing older to summarize (one big newest tool round), cut at a later valid point rather than answer
    # "nothing to compact". A view within the budget stays as it is (facts 18, 22).
    over_keep = sum(measure(m) for m in fit.view[system_head(fit.view):]) > keep
    cut = window_cut(fit.view, fit.lineage, keep_recent_tokens=keep, summarize=summarize, opts=opts,
                     measure=measure, previous_summary=previous_summary, hard=keep <= 0, must_shrink=over_keep)
    fit.apply_cut(cut)
    return fit.finish()


def overflow_compactor(*, window_tokens: int, summarize: Callable[[str], str], model: str | None = None,
                       reserve_tokens: int | None = None, keep_recent_tokens: int = DEFAULT_KEEP_RECENT_TOKENS,
                       tools: Sequence[dict[str, Any]] | None = None, **options: Any
                       ) -> Callable[..., FitResult]:
    """A `compact` callable for overflow.call_with_overflow_recovery: a forced fit (steps b-c) whose kept tail
    halves on every further attempt, so a retry is never the same compaction again."""

    def compact(view: list[Message], *, attempt: int = 1, observed_tokens: int | None = None) -> FitResult:
        return fit_to_window(view, window_tokens=window_tokens, summarize=summarize, model=model,
                             reserve_tokens=reserve_tokens, keep_recent_tokens=keep_recent_tokens >> (attempt - 1),
                             tools=tools, force=True, observed_tokens=observed_tokens, **options)

    return compact
