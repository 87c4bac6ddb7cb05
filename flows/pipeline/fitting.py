"""Fitting a view to the model's window (compaction.md §3-§4), and what every compaction shares.

A fit runs the engine's `fit_to_window` (restore-profile re-summarization, window cut, tool-result
truncation) on a view that would not leave room for the model's answer. `compute_step` is the common part of
a fit and a manual or byte-guard compaction (`flows.pipeline.compaction`): get a summarize callable, run the
engine, map its lineage to raw seqs, refuse results that do not shrink the view, and save the facts that
leave the view as memory notes first (§8). Failures fail closed: the view stays as it was and the reason is
recorded on the event.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from flows.config import settings_values
from flows.engine import STRATEGIES, ContextTooLarge, fit_to_window
from flows.models import Outcome, SummarizerSettings, SummaryEvent, Trigger
from flows.pipeline import view_records as records
from flows.pipeline.call_guard import current_guard
from flows.pipeline.hooks import before_compaction, send_hook
from flows.pipeline.memory import memory_flush
from flows.pipeline.request_budget import RequestNeeds, fit_budget
from flows.pipeline.runs import (
    MAX_SAVE_ATTEMPTS,
    ChainState,
    RunStep,
    elapsed_ms,
    event_fail,
    event_start,
    load_state,
    view_save,
    window_for,
)
from flows.pipeline.summarizers import SummarizeFn, summarizer_for

__all__ = ["hook_before", "policy_options", "restores", "compute_step", "memory_flush_step", "run_fit", "fit_step",
           "chain_fit", "fit_reason", "tokens_words"]

Msg = dict[str, Any]


def hook_before(state: ChainState, event: SummaryEvent, messages: list[Msg], tokens: int) -> None:
    send_hook(before_compaction, chain_id=state.chain.pk, trigger=event.trigger, event_id=event.pk,
              message_count=len(messages), token_count=tokens)


def policy_options(row: SummarizerSettings) -> dict[str, Any]:
    """Identifier policy and compaction provider of a settings row, as the engine's keyword arguments."""
    return {"identifier_policy": row.identifier_policy, "identifier_instructions": row.identifier_instructions,
            "provider": row.compaction_provider or None}


def restores(row: SummarizerSettings) -> bool:
    """Whether a fit starts with the restore profile (PentAGI's passes again): not under the window strategy,
    whose own passes have just run on the view, so a restore would only repeat their calls."""
    return row.strategy != STRATEGIES[1]  # "window"


def tokens_words(n: int) -> str:
    """Tokens as a person reads them: "812", "15.2k", "1.05M"."""
    if n < 1000:
        return f"{n:,}"
    return f"{n / 1000:.1f}k" if n < 1_000_000 else f"{n / 1_000_000:.2f}M"


def fit_reason(*, tokens: int, reserve: int, window: int, trigger: str, observed_tokens: int | None) -> str:
    """Why a fit ran, in words and numbers: "view 15.2k tokens + 2.0k reserve > window 16.4k"."""
    if observed_tokens is not None:
        return (f"the provider reported the context too large ({tokens_words(observed_tokens)} tokens "
                f"observed, window {tokens_words(window)}): forced fit")
    if trigger == Trigger.OVERFLOW:
        return f"context overflow reported: forced fit of view {tokens_words(tokens)} tokens to window " \
               f"{tokens_words(window)}"
    relation = ">" if tokens + reserve > window else "<="
    return (f"view {tokens_words(tokens)} tokens + {tokens_words(reserve)} reserve {relation} window "
            f"{tokens_words(window)}")


def _leaving(before: list[Msg], after: list[Msg]) -> list[Msg]:
    """Input messages that are no longer in the view verbatim."""
    return [m for m, gone in zip(before, records.fresh_mask(before, after), strict=False) if gone]


def _finish_compute(state: ChainState, step: RunStep, result: Any, before: list[Msg],
                    lineage: list[list[int]], *, dry_run: bool = False) -> RunStep:
    """Shared tail of fit and compact: lineage, tokens, no-progress check, memory flush (not in a dry run: the
    apply that reuses its result flushes, `memory_flush_step`)."""
    step.calls = int(getattr(result, "calls", 0) or 0)
    if getattr(result, "error", None):  # the engine failed closed (e.g. the strict identifier audit)
        step.outcome, step.reason = Outcome.FAILED, f"compaction failed: {result.error}"
        return step
    step.after = list(result.messages)
    result_lineage = getattr(result, "lineage", None)
    step.lineage = (records.compose_lineage(result_lineage, lineage) if result_lineage is not None
                    else records.align_lineage(step.after, before, lineage))
    step.tokens_after = records.view_tokens(step.after, model=state.model)
    if step.after == before:
        step.outcome, step.reason = Outcome.SKIPPED, "nothing to compact"
    elif step.tokens_after >= step.tokens_before and records.view_bytes(step.after) >= records.view_bytes(before):
        step.outcome, step.reason = Outcome.FAILED, "the compaction did not shrink the view; the view is unchanged"
    elif not dry_run:
        memory_flush_step(state, step)
    return step


def memory_flush_step(state: ChainState, step: RunStep) -> None:
    """Save the facts leaving the view with `step` as memory notes (§8), when the settings ask for it."""
    if state.row.memory_flush:
        memory_flush(chain=state.chain, event=step.event, leaving=_leaving(step.before, step.after))


def _engine_step(state: ChainState, step: RunStep, before: list[Msg], lineage: list[list[int]],
                 run: Callable[[SummarizeFn], Any], summarize: SummarizeFn, dry_run: bool = False) -> RunStep:
    try:
        result = run(summarize)
    except ContextTooLarge as exc:
        step.outcome, step.reason = Outcome.FAILED, str(exc)  # its message starts "context too large:"
    except Exception as exc:  # an endpoint down or a failed audit: fail closed, keep the view, record why
        step.outcome, step.reason = Outcome.FAILED, f"compaction failed: {exc}"
    else:
        step = _finish_compute(state, step, result, before, lineage, dry_run=dry_run)
    return step


def compute_step(state: ChainState, step: RunStep, before: list[Msg], lineage: list[list[int]],
                 run: Callable[[SummarizeFn], Any], *, dry_run: bool = False) -> RunStep:
    """Run one engine compaction (`run(summarize)`) and fill `step`; a failure keeps `before` as the view.
    A `dry_run` writes nothing (no memory notes; the caller holds the model calls' rows).

    On a gateway call whose fallback is offline (`call_guard`), a compaction the models' summaries failed
    (e.g. the identifier audit, twice) runs again with the offline summarizer writing every summary."""
    started = time.monotonic()
    summarize = summarizer_for(flow=state.chain.agent.flow, event=step.event, purpose="compaction")
    step = _engine_step(state, step, before, lineage, run, summarize, dry_run)
    guard, key = current_guard(), step.event.pk if step.event is not None else None
    if guard is not None and guard.stands_in and step.reason.startswith("compaction failed"):
        guard.failed(key, step.reason.removeprefix("compaction failed: "))
        step.outcome, step.reason = Outcome.OK, ""
        step = _engine_step(state, step, before, lineage, run, guard.offline_for(key))
    step.stood_in = guard.note_for(key) if guard is not None else ""
    step.duration_ms = elapsed_ms(started)
    if step.outcome == Outcome.FAILED:
        step.after, step.lineage, step.tokens_after = before, lineage, step.tokens_before
    return step


def run_fit(state: ChainState, event: SummaryEvent, messages: list[Msg], lineage: list[list[int]], *,
            window_tokens: int, reserve_tokens: int, tokens_before: int,
            observed_tokens: int | None = None) -> RunStep:
    """Fit to the window (restore-profile re-summarization, window cut, tool-result truncation).

    `reserve_tokens` is the effective reserve `window_for` computed (the one the threshold and the page's bar use),
    so the fit's budget is the same window minus the same reserve."""
    row = state.row
    step = RunStep(trigger=event.trigger, outcome=Outcome.OK, event=event, before=messages,
                   tokens_before=tokens_before)

    def run(summarize: SummarizeFn) -> Any:
        return fit_to_window(messages, window_tokens=window_tokens, summarize=summarize, model=state.model or None,
                             reserve_tokens=reserve_tokens, keep_recent_tokens=row.keep_recent_tokens,
                             force=event.trigger == Trigger.OVERFLOW, observed_tokens=observed_tokens,
                             restore=restores(row), **policy_options(row))

    step = compute_step(state, step, messages, lineage, run)
    if step.outcome == Outcome.OK:
        step.reason = fit_reason(tokens=tokens_before, reserve=reserve_tokens, window=window_tokens,
                                 trigger=event.trigger, observed_tokens=observed_tokens)
    if step.outcome == Outcome.SKIPPED:
        step.reason = "already fits the window" if observed_tokens is None else "nothing left to compact"
    return step


def fit_step(state: ChainState, messages: list[Msg], lineage: list[list[int]], *, trigger: str,
             snapshot: dict[str, Any], force: bool = False, observed_tokens: int | None = None,
             needs: RequestNeeds | None = None) -> RunStep | None:
    """Fit `messages` to the model's window; None when the window is unknown or it already fits.

    With `needs` (a gateway request: its tools, schema, output cap and the provider's token ratio) the view
    gets the room the request leaves (`request_budget`); the ratio then stands for an overflow's observed
    count, which measured the whole request, not the view."""
    window = window_for(flow=state.chain.agent.flow, row=state.row, chain_id=state.chain.pk, needs=needs)
    if window is None or not state.row.compaction_enabled:
        return None
    window_tokens, reserve = window
    tokens = records.view_tokens(messages, model=state.model)
    if needs is not None:
        target = max(fit_budget(window_tokens, reserve, needs).view_target, 1)
        reserve, observed_tokens = window_tokens - target, None
    else:
        tokens = observed_tokens or tokens
    if not force and tokens + reserve <= window_tokens:
        return None
    event = event_start(chain=state.chain, trigger=trigger, snapshot=snapshot, notify=state.row.notify_user)
    hook_before(state, event, messages, tokens)
    return run_fit(state, event, messages, lineage, window_tokens=window_tokens, reserve_tokens=reserve,
                   tokens_before=tokens, observed_tokens=observed_tokens)


def chain_fit(*, chain_id: int, trigger: str = Trigger.WINDOW, observed_tokens: int | None = None,
              needs: RequestNeeds | None = None) -> SummaryEvent | None:
    """Fit the current view to the window (on demand, or forced after a context-overflow error)."""
    for _attempt in range(MAX_SAVE_ATTEMPTS):
        state = load_state(chain_id)
        snapshot = settings_values(state.row)
        forced = trigger == Trigger.OVERFLOW
        step = fit_step(state, state.messages, state.lineage, trigger=trigger, snapshot=snapshot, force=forced,
                        observed_tokens=observed_tokens, needs=needs)
        if step is None:
            if not state.new_raw:
                return None
            step = RunStep(trigger=trigger, outcome=Outcome.SKIPPED, reason="fits the window (or window unknown)",
                           before=state.messages, after=state.messages, lineage=state.lineage)
        ok = step.outcome == Outcome.OK
        saved = view_save(state, messages=step.after if ok else state.messages,
                          lineage=step.lineage if ok else state.lineage, steps=[step], snapshot=snapshot,
                          notify=state.row.notify_user, write_view=ok or bool(state.new_raw))
        if saved is not None:
            return saved[0]
        if step.event is not None:
            event_fail(step.event, "superseded: a newer view was saved meanwhile")
    return None
