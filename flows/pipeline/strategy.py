"""Which summarization runs after a turn: PentAGI's byte budgets, or the window-aware strategy.

The `strategy` setting of a profile or flow picks it. `window` needs the model's window (`runs.window_for`);
when the window is unknown the chain is summarized with PentAGI's passes, as if `pentagi` were set, because
the window strategy would have nothing to measure against. Both return the engine's `SummarizeResult`, so the
after-turn run and the settings preview treat them alike.
"""
from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

from flows.config import summarizer_config_for
from flows.engine import WindowTarget, summarize_chain, summarize_chain_for_window
from flows.models import Flow, SummarizerSettings
from flows.pipeline.request_budget import RequestNeeds
from flows.pipeline.runs import window_for

__all__ = ["WINDOW", "window_target_for", "summarize_by_strategy", "skipped_reason", "folded_locally"]

WINDOW = "window"
Msg = dict[str, Any]


def window_target_for(*, flow: Flow, row: SummarizerSettings, chain_id: int | None = None,
                      needs: RequestNeeds | None = None) -> WindowTarget | None:
    """The window strategy's target for a settings row, or None when PentAGI's passes run (strategy `pentagi`,
    or the window of the model serving the chain is unknown: `runs.window_info`)."""
    if row.strategy != WINDOW:
        return None
    window = window_for(flow=flow, row=row, chain_id=chain_id, needs=needs)
    if window is None:
        return None
    return WindowTarget(window_tokens=window[0], reserve_tokens=window[1],
                        trigger_percent=row.window_trigger_percent, margin_percent=row.window_margin_percent,
                        model=flow.model_name or None, input_tokens=row.window_input_tokens,
                        local_folds=row.window_local_folds)


def summarize_by_strategy(messages: list[Msg], *, flow: Flow, row: SummarizerSettings,
                          summarize: Callable[[str], str], id_template: str | None,
                          lineage_in: Sequence[Sequence[int]] | None, rng: random.Random | None = None,
                          chain_id: int | None = None, needs: RequestNeeds | None = None) -> Any:
    """The engine's summarization of `messages` under the row's strategy (a `SummarizeResult`)."""
    config = summarizer_config_for(row)
    target = window_target_for(flow=flow, row=row, chain_id=chain_id, needs=needs)
    if target is None:
        return summarize_chain(messages, config, summarize, id_template=id_template, lineage_in=lineage_in, rng=rng)
    return summarize_chain_for_window(messages, config, summarize, target=target, id_template=id_template,
                                      lineage_in=lineage_in, rng=rng)


def folded_locally(result: Any) -> bool:
    """Whether the window strategy folded history with the offline summarizer alone (`window_local_folds`): the
    view changed although no model was called, so the run is not a skipped one."""
    return bool((result.stats.get("window") or {}).get("local_folds"))


def skipped_reason(result: Any) -> str:
    """Why a run made no summarize call, in the words of the strategy that decided it."""
    window = result.stats.get("window")
    if window:
        return (f"fits the window's margin ({window['tokens_before']:,} of {window['trigger_tokens']:,} tokens): "
                "nothing summarized")
    return "within the summarizer's byte budgets: nothing summarized"
