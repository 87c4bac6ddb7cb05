"""What a deployment is configured with: summarizer settings, model endpoints and windows, compaction plugins.

`registry` (defaults per profile, validation, the engine config of a settings row), `env` (settings rows as
`.env` text and back), `writes` (every settings change, recorded with who made it), `endpoints` (LLM endpoints
from the environment and the database, model windows), `windows` (writes of windows and endpoints),
`token_ratios` (how a provider's token count relates to ours, learned per model), `compaction_plugins`
(compaction providers installed as entry points).
"""
from flows.config.compaction_plugins import load_compaction_providers
from flows.config.endpoints import (
    model_window_for,
    openai_client_for,
    provider_for,
    provider_from_env,
    provider_of_kind,
    split_model_ref,
)
from flows.config.env import parse_env_text, settings_env_export, settings_env_export_rows
from flows.config.registry import (
    SettingsError,
    compaction_provider_choices,
    defaults_for,
    settings_for,
    settings_validate,
    settings_values,
    settings_warnings,
    summarizer_config_for,
)
from flows.config.token_ratios import MAX_RATIO, MIN_RATIO, token_ratio_for, token_ratio_learn
from flows.config.windows import model_window_ensure, provider_endpoint_ensure, provider_endpoint_remove
from flows.config.writes import (
    EnvImportReport,
    settings_create,
    settings_import_env,
    settings_override_for,
    settings_save,
    settings_update,
)

__all__ = [
    "EnvImportReport", "SettingsError", "compaction_provider_choices", "defaults_for", "load_compaction_providers",
    "model_window_ensure", "model_window_for", "openai_client_for", "parse_env_text", "provider_endpoint_ensure",
    "provider_endpoint_remove", "provider_for", "provider_from_env", "provider_of_kind", "settings_create",
    "settings_env_export",
    "settings_env_export_rows", "settings_for", "settings_import_env", "settings_override_for", "settings_save",
    "settings_update", "settings_validate", "settings_values", "settings_warnings", "split_model_ref",
    "summarizer_config_for", "token_ratio_for", "token_ratio_learn", "MIN_RATIO", "MAX_RATIO",
]
