"""What goes upstream: the agent's own messages (observe), or the chain summarized and fitted (manage).

Manage mode runs the same engine as after a turn (`chain_summarize`: summarize, then fit) right before the
call; the saved view plus the raw messages newer than it is what goes upstream, pruned per request when
pruning is on. After an upstream's context overflow a forced compaction gives a smaller view.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from flows.engine import count_tokens, prune_view
from flows.models import Chain, PruningMode, Trigger
from flows.pipeline import chain_fit, chain_summarize, elapsed_ms, load_state, window_for

__all__ = ["Msg", "SentMessages", "gateway_view_prepare", "gateway_observed", "gateway_overflow_compact"]

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


def _state_messages(chain_id: int, *, prune: bool) -> SentMessages:
    """The newest view plus every raw message after it (an open tool round included: it is never folded)."""
    state = load_state(chain_id)
    messages, seq_to = state.sendable, state.sendable_seq_to
    window = window_for(flow=state.chain.agent.flow, row=state.row) if prune else None
    if window is not None and state.row.pruning_mode == PruningMode.ON:
        trimmed = list(prune_view(messages, window_tokens=window[0], settings=state.row))
        if trimmed != messages:
            return SentMessages(trimmed, state.base_version, seq_to, exact=False)
    return SentMessages(messages, state.base_version, seq_to, exact=True)


def gateway_view_prepare(*, chain_id: int) -> SentMessages:
    """Manage mode: the chain summarized with its profile and fitted to the window, right before the call.

    The same engine runs as after a turn (`chain_summarize`: summarize, then fit); the saved view plus the raw
    messages newer than it is what goes upstream, pruned per request when pruning is on.
    """
    started = time.monotonic()
    chain_summarize(chain_id=chain_id, trigger=Trigger.TURN)
    spent = elapsed_ms(started)
    sent = _state_messages(chain_id, prune=True)
    sent.summarize_ms = spent
    return sent


def gateway_observed(messages: list[Msg], chain: Chain, model: str) -> SentMessages:
    """Observe mode: the agent's own messages go upstream. When the chain holds exactly them (not so in a
    successor our compaction seeded with a summary), their tokens are the chain's running total."""
    holds_them = len(messages) == chain.last_seq and chain.raw_tokens is not None
    tokens = chain.raw_tokens if holds_them else count_tokens(messages, model=model or None)
    return SentMessages(messages, None, chain.last_seq, exact=True, tokens=tokens)


def gateway_overflow_compact(*, chain_id: int, observed_tokens: int | None) -> SentMessages:
    """After the upstream reported a context overflow: force a compaction and return the smaller view."""
    started = time.monotonic()
    chain_fit(chain_id=chain_id, trigger=Trigger.OVERFLOW, observed_tokens=observed_tokens)
    spent = elapsed_ms(started)
    sent = _state_messages(chain_id, prune=True)
    sent.exact, sent.summarize_ms = False, spent  # a retry stores what it sent: each attempt's input is shown
    return sent
