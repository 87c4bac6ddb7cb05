"""Every write to the database goes through these functions (HackSoft-style services, keyword-only)."""
from .history import (
    MAX_BATCH_MESSAGES, MAX_MESSAGE_BYTES, AppendError, AppendResult, agent_create, api_token_create,
    chain_append, chain_import, flow_create, turn_completed,
)
from .settings import settings_import_env, settings_override_for, settings_update

__all__ = [
    "MAX_BATCH_MESSAGES", "MAX_MESSAGE_BYTES", "AppendError", "AppendResult", "agent_create", "api_token_create",
    "chain_append", "chain_import", "flow_create", "turn_completed",
    "settings_import_env", "settings_override_for", "settings_update",
]
