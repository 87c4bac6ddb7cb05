"""What the window-aware strategy would have spent summarizing a chain: its raw history replayed, cached.

The chain and flow pages show what summarizing a chain has cost (its events and model calls) beside what the
window-aware profile (`strategy: window`, the chain's own trigger, margin and input bound) would have cost on
the same history. That figure is measured, not guessed: the chain's raw messages are replayed turn by turn
(`split_turns`, a turn ends where the agent would call its model again) through the window strategy and the
window fit, as the pipeline runs them after each turn, with the offline extractive summarizer counting what
each call is sent (calls, input tokens in the flow's tokenizer, the system prompt the app sends beside each
prompt included: it is billed too) and, at the window of the model serving the
chain, how many requests could not be fitted. Nothing is saved and no model is called.

Cost on the page. The replay's state is kept per process (a small LRU, like the preview's caches) and only
extended as the chain grows: a page view replays only the turns appended since the last one. A replay of more
than `SYNC_MESSAGES` new messages (on a page of several chains: in all) runs in one background thread instead of
the request (the page says it is being estimated), so no page waits seconds on a long import. USD is the
chain's own blended rate (what its summarizer's model calls cost per input token) times the estimated input
tokens; none without a priced call.
"""
from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from django.db import connection

from flows.config import settings_for, summarizer_config_for
from flows.engine import (
    COMPACTION_SYSTEM_PROMPT,
    SUMMARY_SYSTEM_PROMPT,
    ContextTooLarge,
    SummarizerConfig,
    WindowTarget,
    fit_to_window,
    make_extractive,
    split_turns,
    summarize_chain_for_window,
    text_tokens,
)
from flows.models import Chain, SummarizerSettings
from flows.pipeline.preview_cache import Lru, chain_data
from flows.pipeline.runs import window_for
from flows.pipeline.summarizers import InputCounter, SummarizeFn

__all__ = ["WindowEstimate", "window_estimate", "window_estimates_wait", "window_estimates_clear", "SYNC_MESSAGES"]

log = logging.getLogger(__name__)

SYNC_MESSAGES = 200  # more new messages than this are replayed in the background, never on the request
MAX_REPLAYS = 32
Msg = dict[str, Any]


@dataclass(frozen=True)
class WindowEstimate:
    """The window strategy's cost on a chain's history so far (`ready`), or why there is none yet."""

    state: str  # "ready" | "pending" (being replayed in the background) | "unknown_window"
    calls: int = 0
    input_tokens: int = 0
    refused: int = 0  # requests the window fit could not bring within the budget
    turns: int = 0
    window_tokens: int = 0
    usd: float | None = None
    replayed: int = 0  # raw messages this call replayed on the request (0: all cached, or in the background)


@dataclass
class _Replay:
    """Where a replay stands: the raw messages replayed, the view the strategy left, and what it cost."""

    done: int = 0  # raw messages replayed (a prefix of the chain)
    view: list[Msg] = field(default_factory=list)
    calls: int = 0
    input_tokens: int = 0
    refused: int = 0
    turns: int = 0


def input_counter(model: str | None) -> InputCounter:
    """The offline summarizer, counting calls and input tokens in `model`'s tokenizer, system prompts included."""
    return InputCounter(make_extractive(), SUMMARY_SYSTEM_PROMPT, size=partial(text_tokens, model=model))


_replays: Lru[tuple[Any, ...], _Replay] = Lru(MAX_REPLAYS)
_locks: dict[tuple[Any, ...], threading.Lock] = {}
_locks_guard = threading.Lock()
_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="window-estimate")
_pending: set[tuple[Any, ...]] = set()


def _lock(key: tuple[Any, ...]) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault(key, threading.Lock())


def _turn(state: _Replay, turn: list[Msg], config: SummarizerConfig, target: WindowTarget,
          counter: InputCounter, checkpoint: SummarizeFn, model: str | None) -> None:
    result = summarize_chain_for_window(state.view + turn, config, counter, target=target)
    try:
        fit = fit_to_window(result.messages, window_tokens=target.window_tokens, summarize=checkpoint,
                            model=model, reserve_tokens=target.reserve_tokens, restore=False)
    except ContextTooLarge:
        state.refused += 1  # as the pipeline: the failure is recorded, the summarized view kept
        state.view = result.messages
    else:
        state.view = fit.messages


def _extend(state: _Replay, raw: list[Msg], config: SummarizerConfig, target: WindowTarget,
            model: str | None) -> _Replay:
    """`state` with the raw messages after it replayed; stops before a turn that is not a valid view yet (an
    open tool round at the end: the next page view replays it once its results are in)."""
    state = replace(state, view=list(state.view))
    counter = input_counter(model)
    checkpoint = counter.with_system(COMPACTION_SYSTEM_PROMPT)  # the fit's calls, counted into the same totals
    for turn in split_turns(raw[state.done:]):
        before = replace(state, view=list(state.view))
        try:
            _turn(state, turn, config, target, counter, checkpoint, model)
        except ValueError:  # InvalidView is a ValueError: the turn's tool round is still open
            state = before
            break
        state.done += len(turn)
        state.turns += 1
    state.calls += counter.calls
    state.input_tokens += counter.input
    return state


def _key(chain: Chain, row: SummarizerSettings, window: tuple[int, int]) -> tuple[Any, ...]:
    created = chain.created_at.isoformat() if chain.created_at else ""
    return (chain.pk, created, window, row.window_trigger_percent, row.window_margin_percent,
            row.window_input_tokens, row.window_local_folds, repr(summarizer_config_for(row)))


def _replayed(chain: Chain, row: SummarizerSettings, window: tuple[int, int], key: tuple[Any, ...]) -> _Replay:
    model = chain.agent.flow.model_name or None
    target = WindowTarget(window_tokens=window[0], reserve_tokens=window[1],
                          trigger_percent=row.window_trigger_percent, margin_percent=row.window_margin_percent,
                          model=model, input_tokens=row.window_input_tokens,
                          local_folds=row.window_local_folds)
    with _lock(key):  # one replay of a chain at a time; a second asker finds it extended
        state = _replays.get(key) or _Replay()
        raw = chain_data(chain=chain, model=model).raw
        if len(raw) > state.done:
            state = _replays.put(key, _extend(state, raw, summarizer_config_for(row), target, model))
        return state


def _background(chain_id: int, key: tuple[Any, ...]) -> None:
    try:
        chain = Chain.objects.select_related("agent__flow").filter(pk=chain_id).first()
        if chain is not None:
            row = settings_for(profile=chain.agent.profile, flow=chain.agent.flow)
            _replayed(chain, row, key[2], key)
    except Exception:  # only the estimate is missing: the page says it is pending until the next try
        log.exception("window estimate of chain %s failed", chain_id)
    finally:
        with _locks_guard:
            _pending.discard(key)
        connection.close()  # this thread's own connection


def _estimate(state: _Replay, window: tuple[int, int], rate: float | None, replayed: int) -> WindowEstimate:
    return WindowEstimate("ready", calls=state.calls, input_tokens=state.input_tokens, refused=state.refused,
                          turns=state.turns, window_tokens=window[0],
                          usd=None if rate is None else rate * state.input_tokens, replayed=replayed)


def window_estimate(*, chain: Chain, usd_per_input_token: float | None = None,
                    sync_messages: int | None = None) -> WindowEstimate:
    """What the window-aware strategy would have spent on `chain`'s raw history (see the module docstring).
    At most `sync_messages` (default `SYNC_MESSAGES`) new messages are replayed on the request; a page showing
    several chains passes what its earlier chains left of that budget (`.replayed` says what each took)."""
    row = settings_for(profile=chain.agent.profile, flow=chain.agent.flow)
    window = window_for(flow=chain.agent.flow, row=row, chain_id=chain.pk)
    if window is None:
        return WindowEstimate("unknown_window")
    key = _key(chain, row, window)
    state = _replays.get(key)
    done = state.done if state else 0
    behind = chain.last_seq - done  # seqs start at 1 with no gaps: a count of messages
    if behind <= (SYNC_MESSAGES if sync_messages is None else sync_messages):
        state = _replayed(chain, row, window, key)
        return _estimate(state, window, usd_per_input_token, max(state.done - done, 0))
    with _locks_guard:
        if key not in _pending:
            _pending.add(key)
            _executor.submit(_background, chain.pk, key)
    return WindowEstimate("pending", window_tokens=window[0])


def window_estimates_wait(timeout: float | None = None) -> bool:
    """Block until the background replays asked for so far have run (for tests and benchmarks)."""
    try:
        _executor.submit(lambda: None).result(timeout=timeout)
    except TimeoutError:
        return False
    return True


def window_estimates_clear() -> None:
    _replays.clear()
