"""What goes upstream: the agent's own messages (observe), or the chain summarized and fitted (manage).

Manage mode runs the same engine as after a turn (`chain_summarize`: summarize, then fit) right before the
call; the saved view plus the raw messages newer than it is what goes upstream, pruned per request when
pruning is on. After an upstream's context overflow a forced compaction gives a smaller view.

The fit is the request's, not only the messages': the wire format counts what else the provider counts
(`RequestNeeds`: tools, a structured-output schema, the request's own max output, the learned token ratio),
and the view gets the room that leaves (`flows.pipeline.request_budget`). Manage mode then clamps the
request's max output to what the view leaves (`SentMessages.max_output`); both modes record the breakdown on
the call (`SentMessages.budget`) and flag a request that cannot fit (`fits`).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from flows.config import settings_for
from flows.engine import count_tokens, prune_view
from flows.models import Chain, Outcome, PruningMode, Trigger
from flows.pipeline import (
    CallGuard,
    RequestNeeds,
    chain_fit,
    chain_summarize,
    elapsed_ms,
    fit_budget,
    guarding,
    load_state,
    window_info,
)

__all__ = ["Msg", "SentMessages", "budget_record", "budget_error", "gateway_view_prepare", "gateway_observed",
           "gateway_overflow_compact", "call_guard_for"]

Msg = dict[str, Any]


@dataclass
class SentMessages:
    """What goes upstream and how to find it again (see GatewayCall)."""

    messages: list[Msg]
    view_version: int | None
    raw_seq_to: int
    exact: bool  # False: `messages` differ from the stored state referenced, so the call stores them
    summarize_ms: int = 0  # spent summarizing/compacting to get them
    tokens: int | None = None  # our estimate of their tokens when known without counting (Chain.raw_tokens)
    max_output: int | None = None  # manage mode: the request's max output clamped to what the view leaves
    budget: dict[str, Any] | None = None  # the request's breakdown (see `budget_record`), None: window unknown
    fits: bool = True  # False: even the fitted request cannot keep the floor of its answer free
    failure: str = ""  # why the compaction run for this call failed (its event's reason), "" when it did not


def _state_messages(chain_id: int, *, needs: RequestNeeds | None = None, model: str = "") -> SentMessages:
    """The newest view plus every raw message after it (an open tool round included: it is never folded),
    pruned when pruning is on, with the request's breakdown when `needs` is given."""
    state = load_state(chain_id)
    messages, seq_to = state.sendable, state.sendable_seq_to
    window = window_info(flow=state.chain.agent.flow, row=state.row, chain_id=chain_id, needs=needs)
    sent = SentMessages(messages, state.base_version, seq_to, exact=True)
    if window is not None and state.row.pruning_mode == PruningMode.ON:
        trimmed = list(prune_view(messages, window_tokens=window[0], settings=state.row))
        if trimmed != messages:
            sent = SentMessages(trimmed, state.base_version, seq_to, exact=False)
    return sent if needs is None else budget_record(sent, window, needs, model=model, manage=True)


def budget_record(sent: SentMessages, window: tuple[int, int, str] | None, needs: RequestNeeds, *,
                  model: str, manage: bool) -> SentMessages:
    """Fill `sent.budget`, `.fits` and (manage mode) `.max_output` for the request `needs` describes; a window
    we do not know leaves the request as it came (nothing can be decided without it)."""
    if window is None:
        return sent
    window_tokens, reserve, source = window
    budget = fit_budget(window_tokens, reserve, needs)
    view = sent.tokens if sent.tokens is not None else count_tokens(sent.messages, model=model or None)
    sent.fits = budget.fits(view)
    cap = budget.output_cap(view)
    if manage and cap is not None and cap != needs.max_output and sent.fits:
        sent.max_output = cap
    sent.budget = {"window": window_tokens, "window_source": source, "messages": view, "tools": needs.tools,
                   "schema": needs.schema, "ratio": round(budget.ratio, 4), "prompt": budget.prompt(view),
                   "reserve": budget.reserve, "max_output_asked": needs.max_output,
                   "max_output_sent": sent.max_output if sent.max_output is not None else needs.max_output,
                   "floor": budget.floor, "fits": sent.fits}
    return sent


def budget_error(sent: SentMessages, model: str) -> str:
    """The one message for a request that cannot fit, with numbers that add up (`sent.budget`)."""
    b = sent.budget or {}
    ours = b["messages"] + b["tools"] + b["schema"]
    scaled = f", x{b['ratio']} learned for this provider: {b['prompt']:,}" if b["ratio"] != 1 else ""
    return (f"context too large: the request needs {b['prompt']:,} tokens (messages {b['messages']:,} + tools "
            f"{b['tools']:,} + response schema {b['schema']:,} = {ours:,}{scaled}) and at least {b['floor']:,} for "
            f"the answer, but the window of {model} is {b['window']:,} tokens ({b['window_source']}), even after "
            "compacting the chain")


def call_guard_for(chain: Chain) -> CallGuard:
    """The bound and fallback of one call's summarizing, from the chain's settings (profile and flow)."""
    row = settings_for(profile=chain.agent.profile, flow=chain.agent.flow)
    return CallGuard(fallback=row.summary_fallback, deadline_seconds=float(row.summary_deadline_seconds),
                     max_calls=row.summary_max_calls)


def gateway_view_prepare(*, chain_id: int, needs: RequestNeeds | None = None, model: str = "",
                         guard: CallGuard | None = None) -> SentMessages:
    """Manage mode: the chain summarized with its profile and fitted to the room the request leaves, right
    before the call.

    The same engine runs as after a turn (`chain_summarize`: summarize, then fit); when there was nothing new
    to summarize the view is still fitted to this request (its tools or output cap may not fit the view the
    last turn saved). The saved view plus the raw messages newer than it is what goes upstream, pruned per
    request when pruning is on. `guard` bounds the summarizing and says what stands in for a failed model
    (`summary_fallback`, `summary_deadline_seconds`, `summary_max_calls`): the chain's settings when None.
    """
    started = time.monotonic()
    with guarding(guard or call_guard_for(Chain.objects.select_related("agent__flow").get(pk=chain_id))):
        if chain_summarize(chain_id=chain_id, trigger=Trigger.TURN, needs=needs) is None and needs is not None:
            chain_fit(chain_id=chain_id, trigger=Trigger.WINDOW, needs=needs)
    spent = elapsed_ms(started)
    sent = _state_messages(chain_id, needs=needs, model=model)
    sent.summarize_ms = spent
    return sent


def gateway_observed(messages: list[Msg], chain: Chain, model: str, needs: RequestNeeds | None = None
                     ) -> SentMessages:
    """Observe mode: the agent's own messages go upstream. When the chain holds exactly them (not so in a
    successor our compaction seeded with a summary), their tokens are the chain's running total. The
    request's breakdown is recorded (and a request that cannot fit flagged) without changing anything."""
    holds_them = len(messages) == chain.last_seq and chain.raw_tokens is not None
    tokens = chain.raw_tokens if holds_them else count_tokens(messages, model=model or None)
    sent = SentMessages(messages, None, chain.last_seq, exact=True, tokens=tokens)
    if needs is None:
        return sent
    row = settings_for(profile=chain.agent.profile, flow=chain.agent.flow)
    window = window_info(flow=chain.agent.flow, row=row, chain_id=chain.pk, needs=needs)
    return budget_record(sent, window, needs, model=model, manage=False)


def gateway_overflow_compact(*, chain_id: int, observed_tokens: int | None, needs: RequestNeeds | None = None,
                             model: str = "", guard: CallGuard | None = None) -> SentMessages:
    """After the upstream reported a context overflow: force a compaction and return the smaller view.

    With `needs` the fit uses the request's budget; its ratio already holds what the overflow taught (the
    caller learned it from `observed_tokens` first), so the observed count is not applied twice. `guard`: the
    call's bound and fallback, shared with the summarizing before the call (see `gateway_view_prepare`)."""
    started = time.monotonic()
    with guarding(guard or call_guard_for(Chain.objects.select_related("agent__flow").get(pk=chain_id))):
        event = chain_fit(chain_id=chain_id, trigger=Trigger.OVERFLOW,
                          observed_tokens=None if needs else observed_tokens, needs=needs)
    spent = elapsed_ms(started)
    sent = _state_messages(chain_id, needs=needs, model=model)
    sent.exact, sent.summarize_ms = False, spent  # a retry stores what it sent: each attempt's input is shown
    if event is not None and event.outcome == Outcome.FAILED:
        sent.failure = event.reason
    return sent
