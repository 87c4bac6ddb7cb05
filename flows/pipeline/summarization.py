"""Summarization after an agent turn (PentAGI's algorithm), then a fit of the result to the model's window.

`chain_summarize` is what the `flows.summarize_chain` task runs. It first honours the byte guard (a compaction
that rotates the chain into a successor when the active segment is too large), then summarizes *view + new
raw* with the engine (PentAGI's `summarize_chain`, or the window-aware strategy when the `strategy` setting says
so: `strategy.summarize_by_strategy`), fits the result to the window when the window is known, and saves both
steps in one version-checked transaction (`runs.view_save`).
"""
from __future__ import annotations

import time
from typing import Any

from flows.config import settings_values
from flows.models import Outcome, SummaryEvent, Trigger
from flows.pipeline import view_records as records
from flows.pipeline.call_guard import current_guard
from flows.pipeline.compaction import byte_guard_due, chain_guard
from flows.pipeline.fitting import fit_step
from flows.pipeline.recovery import claim_lease_seconds
from flows.pipeline.request_budget import RequestNeeds
from flows.pipeline.runs import (
    MAX_SAVE_ATTEMPTS,
    ChainState,
    RunStep,
    elapsed_ms,
    event_claim,
    event_fail,
    event_start,
    load_state,
    view_save,
)
from flows.pipeline.strategy import folded_locally, skipped_reason, summarize_by_strategy
from flows.pipeline.summarizers import SummarizeFn, summarizer_for

__all__ = ["chain_summarize"]


def _ran_reason(result: Any) -> str:
    """The rules that fired, in words and numbers (issue 23); under the window strategy, first why it ran."""
    window = result.stats.get("window")
    if window and (result.calls or folded_locally(result)):
        return (f"view {window['tokens_before']:,} tokens > window margin {window['trigger_tokens']:,}: "
                f"{result.reason}")
    return str(result.reason)


def _engine_summary(state: ChainState, summarize: SummarizeFn, needs: RequestNeeds | None = None) -> Any:
    return summarize_by_strategy(state.messages, flow=state.chain.agent.flow, row=state.row, summarize=summarize,
                                 id_template=state.chain.tool_call_id_template or None, lineage_in=state.lineage,
                                 chain_id=state.chain.pk, needs=needs)


def _summarize_step(state: ChainState, event: SummaryEvent, needs: RequestNeeds | None = None) -> RunStep:
    started, before = time.monotonic(), state.messages
    result = _engine_summary(state, summarizer_for(flow=state.chain.agent.flow, event=event), needs)
    guard = current_guard()
    if result.error and guard is not None and guard.stands_in:  # on a gateway call: the offline summarizer
        guard.failed(event.pk, str(result.error))
        result = _engine_summary(state, guard.offline_for(event.pk), needs)
    tokens_before = records.view_tokens(before, model=state.model)
    step = RunStep(trigger=event.trigger, outcome=Outcome.OK, event=event, before=before, calls=result.calls,
                   duration_ms=elapsed_ms(started), tokens_before=tokens_before,
                   stood_in=guard.note_for(event.pk) if guard is not None else "")
    if result.error:
        step.outcome, step.reason = Outcome.FAILED, f"summarizer error: {result.error}"
        step.after, step.lineage, step.tokens_after = before, state.lineage, tokens_before
        return step
    step.after, step.lineage = result.messages, [list(x) for x in result.lineage]
    step.tokens_after = records.view_tokens(step.after, model=state.model)
    step.reason = _ran_reason(result)
    if result.calls == 0 and not folded_locally(result):
        step.outcome, step.reason = Outcome.SKIPPED, skipped_reason(result)
    return step


def chain_summarize(*, chain_id: int, trigger: str = Trigger.TURN, needs: RequestNeeds | None = None,
                    claim: bool = False) -> SummaryEvent | None:
    """Summarize the view after a turn (then fit it to the window). None when there was nothing new.

    `needs`: the gateway request the view is prepared for (fitted to the room it leaves, `request_budget`).
    `claim` (the queued task): run only if no other run works on this same state (`runs.event_claim`), so a
    chain queued twice, or re-delivered after a crash, never has two runs calling the model at once."""
    event = None
    for _attempt in range(MAX_SAVE_ATTEMPTS):
        state = load_state(chain_id)
        if byte_guard_due(state):
            guard = chain_guard(state=state)
            if guard.outcome == Outcome.OK:
                return guard
            state = load_state(chain_id)  # failed guard recorded; the turn is still summarized as usual
        if not state.new_raw and trigger == Trigger.TURN:
            return event_fail(event, "superseded: a newer view already holds these messages") if event else None
        snapshot = settings_values(state.row)
        if event is None and claim:
            event = event_claim(state, snapshot=snapshot, lease_seconds=claim_lease_seconds())
            if event is None:
                return None  # another run is summarizing this very state
        event = event or event_start(chain=state.chain, trigger=trigger, snapshot=snapshot, notify=False,
                                     raw_seq_to=state.raw_seq_to)
        steps = [_summarize_step(state, event, needs)]
        view, lineage = steps[0].after, steps[0].lineage
        if steps[0].outcome != Outcome.FAILED:
            fit = fit_step(state, view, lineage, trigger=Trigger.WINDOW, snapshot=snapshot, needs=needs)
            if fit is not None:
                steps.append(fit)
                if fit.outcome == Outcome.OK:
                    view, lineage = fit.after, fit.lineage
        saved = view_save(state, messages=view, lineage=lineage, steps=steps, snapshot=snapshot,
                          notify=state.row.notify_user)
        if saved is not None:
            return saved[0]
        for step in steps[1:]:
            if step.event is not None:
                event_fail(step.event, "superseded: a newer view was saved meanwhile")
    return event_fail(event, "superseded: the view kept changing; the next turn will retry") if event else None
