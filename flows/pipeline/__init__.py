"""What the model receives: summarization after a turn, fitting to the window, compaction, preview, and the
background work that runs them.

Runs go one way: `view_records`, `summarizers`, `memory`, `hooks` -> `runs` (state, events, the saved view) ->
`fitting` and `dry_run` (a compaction computed, kept for its apply) -> `compaction` -> `summarization` /
`preview`; `tasks` are the Celery tasks, `embedded_worker` a worker in a thread, `recovery` what a stopped worker
left, `llm/` the model callables, `call_guard` the bound and offline fallback of the summarizing a gateway call
does; `window_replay` what the window-aware strategy would have spent on a chain's history (its replay, for the
chain and flow pages).
"""
from flows.pipeline.call_guard import FAIL, OFFLINE, CallGuard, guarding
from flows.pipeline.compaction import (
    active_bytes,
    chain_compact,
    chain_dry_run,
    chain_request_compaction,
    dry_run_moved,
)
from flows.pipeline.dry_run import DRY_RUN_SECONDS, DryRun
from flows.pipeline.embedded_worker import start_embedded_worker
from flows.pipeline.fitting import chain_fit
from flows.pipeline.hooks import after_compaction, before_compaction
from flows.pipeline.preview import chain_preview
from flows.pipeline.preview_warm import preview_warm, preview_warm_later, preview_warm_wait
from flows.pipeline.recovery import (
    abandoned_after_seconds,
    chains_behind_their_view,
    events_close_abandoned,
    events_recover_interrupted,
    not_queued_requeue,
    summaries_requeue_stale,
)
from flows.pipeline.request_budget import MIN_OUTPUT_TOKENS, Budget, RequestNeeds, fit_budget
from flows.pipeline.runs import elapsed_ms, load_state, serving_route, view_current, window_for, window_info
from flows.pipeline.summarization import chain_summarize
from flows.pipeline.summarizers import set_summarizer_factory, use_summarizer_factory
from flows.pipeline.tasks import RELAYED_TASKS
from flows.pipeline.view_records import seq_ranges
from flows.pipeline.window_replay import (
    SYNC_MESSAGES,
    WindowEstimate,
    window_estimate,
    window_estimates_clear,
    window_estimates_wait,
)

__all__ = [
    "MIN_OUTPUT_TOKENS", "Budget", "RequestNeeds", "fit_budget", "CallGuard", "guarding", "OFFLINE", "FAIL",
    "RELAYED_TASKS", "abandoned_after_seconds", "active_bytes", "after_compaction", "before_compaction",
    "chain_compact", "chain_dry_run", "dry_run_moved", "DryRun", "DRY_RUN_SECONDS",
    "chain_fit", "chain_preview", "chain_request_compaction", "chain_summarize",
    "chains_behind_their_view", "elapsed_ms", "events_close_abandoned", "events_recover_interrupted", "load_state",
    "not_queued_requeue", "summaries_requeue_stale", "preview_warm",
    "preview_warm_later", "preview_warm_wait", "seq_ranges", "set_summarizer_factory", "start_embedded_worker",
    "use_summarizer_factory", "view_current", "window_for", "window_info", "serving_route",
    "SYNC_MESSAGES", "WindowEstimate", "window_estimate", "window_estimates_clear", "window_estimates_wait",
]
