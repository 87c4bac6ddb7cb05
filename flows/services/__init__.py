"""Every write to the database goes through these functions (HackSoft-style services, keyword-only)."""
from .history import (
    MAX_BATCH_MESSAGES, MAX_MESSAGE_BYTES, AppendError, AppendResult, agent_create, api_token_create,
    chain_append, chain_import, flow_create, flow_set_status, turn_completed,
)
from .settings import EnvImportReport, settings_create, settings_import_env, settings_override_for, settings_save, settings_update
from .users import user_ensure
from .windows import model_window_ensure

__all__ = [
    "MAX_BATCH_MESSAGES", "MAX_MESSAGE_BYTES", "AppendError", "AppendResult", "agent_create", "api_token_create",
    "chain_append", "chain_import", "flow_create", "flow_set_status", "turn_completed",
    "EnvImportReport", "settings_create", "settings_import_env", "settings_override_for", "settings_save", "settings_update",
    "model_window_ensure", "user_ensure",
]
