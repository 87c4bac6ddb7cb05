"""Every write to the database goes through these functions (HackSoft-style services, keyword-only).

The package is a one-way pipeline; each module imports only the ones above it in this list:
  view_records, queue, summarizers, memory, settings, users, windows   (leaves)
  history        the raw chain: flows, agents, append, import; queues the summarization after a turn
  runs           load a run's state, record its events, save the model's view (version-checked)
  fitting        fit a view to the model's window; what every compaction shares
  compaction     manual "compact now", the byte guard, successor segments
  summarization  summarize after a turn, then fit     |  preview  settings preview (nothing saved)
  preview_warm   fill the preview's caches in a background thread when the settings page opens
Callers outside import from this facade; docs/architecture.md walks one appended message through it.
"""
from .compaction import chain_compact, chain_request_compaction
from .fitting import chain_fit
from .history import (
    MAX_BATCH_MESSAGES,
    MAX_MESSAGE_BYTES,
    AppendError,
    AppendResult,
    agent_create,
    api_token_create,
    chain_append,
    chain_import,
    flow_create,
    flow_set_status,
    turn_completed,
)
from .preview import chain_preview
from .preview_warm import preview_warm, preview_warm_later, preview_warm_wait
from .runs import view_current
from .settings import (
    EnvImportReport,
    settings_create,
    settings_import_env,
    settings_override_for,
    settings_save,
    settings_update,
)
from .summarization import chain_summarize
from .summarizers import set_summarizer_factory, use_summarizer_factory
from .users import api_token_rotate, user_ensure
from .windows import model_window_ensure, provider_endpoint_ensure, provider_endpoint_remove

__all__ = [
    "MAX_BATCH_MESSAGES", "MAX_MESSAGE_BYTES", "AppendError", "AppendResult", "agent_create", "api_token_create",
    "chain_append", "chain_import", "flow_create", "flow_set_status", "turn_completed",
    "chain_summarize", "chain_fit", "chain_compact", "chain_request_compaction", "chain_preview", "view_current",
    "preview_warm", "preview_warm_later", "preview_warm_wait",
    "set_summarizer_factory", "use_summarizer_factory",
    "EnvImportReport", "settings_create", "settings_import_env", "settings_override_for", "settings_save",
    "settings_update",
    "model_window_ensure", "provider_endpoint_ensure", "provider_endpoint_remove", "user_ensure", "api_token_rotate",
]
