"""Settings that PentAGI reads from environment variables, as admin-editable rows.

One row per profile (agent, assistant) with `flow` empty holds the defaults; a row with `flow` set overrides
them for that flow. Each setting field derives from its declaration in `flows.core.settings_spec` (default = the
agent profile's); `flows.config.registry` applies the assistant's defaults and the validation rules.
"""
from __future__ import annotations

from django.conf import settings as django_settings
from django.core.exceptions import ImproperlyConfigured
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from flows.core import AGENT, FIELDS_BY_NAME, IDENTIFIER_POLICIES, PRUNING_MODES, model_help
from flows.models.chains import Flow, Profile

# Longer text settings are stored as TEXT, shorter ones as VARCHAR.
TEXT_FIELD_FROM_CHARS = 2000


def setting_field(name: str) -> models.Field:
    """The model field of a declared setting: default (the agent profile's), bounds, choices and help."""
    spec = FIELDS_BY_NAME[name]
    default, help_text = spec.default[AGENT], model_help(spec)
    if spec.kind == "bool":
        return models.BooleanField(default=default, help_text=help_text)
    if spec.kind in ("int", "optional_int"):
        validators = [*([MinValueValidator(spec.minimum)] if spec.minimum is not None else []),
                      *([MaxValueValidator(spec.maximum)] if spec.maximum is not None else [])]
        if spec.kind == "optional_int":
            return models.PositiveIntegerField(null=True, blank=True, validators=validators, help_text=help_text)
        return models.PositiveIntegerField(default=default, validators=validators, help_text=help_text)
    if spec.kind == "choice":
        return models.CharField(max_length=spec.max_length or 16, default=default, help_text=help_text,
                                choices=[(c, c.capitalize()) for c in spec.choices])
    if spec.max_length is not None and spec.max_length >= TEXT_FIELD_FROM_CHARS:
        return models.TextField(blank=True, default=default, max_length=spec.max_length, help_text=help_text)
    return models.CharField(max_length=spec.max_length or 200, blank=True, default=default, help_text=help_text)


class IdentifierPolicy(models.TextChoices):
    STRICT = "strict"
    OFF = "off"
    CUSTOM = "custom"


class PruningMode(models.TextChoices):
    OFF = "off"
    ON = "on"


# The declarations name the same choices (they cannot import Django); a mismatch is a bug found at import time.
if tuple(IdentifierPolicy.values) != IDENTIFIER_POLICIES or tuple(PruningMode.values) != PRUNING_MODES:
    raise ImproperlyConfigured("flows.core.settings_spec choices differ from IdentifierPolicy / PruningMode")


class SummarizerSettings(models.Model):
    profile = models.CharField(max_length=16, choices=Profile.choices, default=Profile.AGENT)
    flow = models.ForeignKey(Flow, null=True, blank=True, on_delete=models.CASCADE, related_name="settings_overrides",
                             help_text="Empty: the profile's defaults. Set: an override for that flow only.")

    # Every setting's default (the agent profile's), bounds and help come from its one declaration.
    # --- PentAGI chain summarizer (bytes, never tokens) ---
    preserve_last = setting_field("preserve_last")
    use_qa = setting_field("use_qa")
    summ_human_in_qa = setting_field("summ_human_in_qa")
    last_sec_bytes = setting_field("last_sec_bytes")
    max_bp_bytes = setting_field("max_bp_bytes")
    max_qa_sections = setting_field("max_qa_sections")
    max_qa_bytes = setting_field("max_qa_bytes")
    keep_qa_sections = setting_field("keep_qa_sections")

    # --- When to summarize: PentAGI's byte budgets, or only when the model's window needs it ---
    strategy = setting_field("strategy")
    window_trigger_percent = setting_field("window_trigger_percent")
    window_margin_percent = setting_field("window_margin_percent")
    window_input_tokens = setting_field("window_input_tokens")
    window_local_folds = setting_field("window_local_folds")

    # --- Compaction: fitting the model's window (tokens) ---
    compaction_enabled = setting_field("compaction_enabled")
    reserve_tokens = setting_field("reserve_tokens")
    keep_recent_tokens = setting_field("keep_recent_tokens")
    identifier_policy = setting_field("identifier_policy")
    identifier_instructions = setting_field("identifier_instructions")
    compaction_model = setting_field("compaction_model")
    fallback_models = setting_field("fallback_models")
    compaction_provider = setting_field("compaction_provider")
    max_active_transcript_bytes = setting_field("max_active_transcript_bytes")
    truncate_after_compaction = setting_field("truncate_after_compaction")
    memory_flush = setting_field("memory_flush")
    notify_user = setting_field("notify_user")
    pruning_mode = setting_field("pruning_mode")
    prune_keep_last_assistants = setting_field("prune_keep_last_assistants")
    prune_tools_allow = setting_field("prune_tools_allow")
    prune_tools_deny = setting_field("prune_tools_deny")

    # --- The gateway (/v1/chat/completions) ---
    gateway_mode = setting_field("gateway_mode")
    loop_repeats = setting_field("loop_repeats")
    loop_window = setting_field("loop_window")
    summary_fallback = setting_field("summary_fallback")
    summary_deadline_seconds = setting_field("summary_deadline_seconds")
    summary_max_calls = setting_field("summary_max_calls")

    updated_at = models.DateTimeField(auto_now=True)
    updated_by = models.ForeignKey(django_settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")

    class Meta:
        verbose_name = "summarizer settings"
        verbose_name_plural = "summarizer settings"
        ordering = ["flow_id", "profile"]
        constraints = [
            models.UniqueConstraint(fields=["profile"], condition=models.Q(flow__isnull=True),
                                    name="one_default_per_profile"),
            models.UniqueConstraint(fields=["profile", "flow"], name="one_override_per_flow_profile"),
        ]

    def __str__(self) -> str:
        scope = f"flow #{self.flow_id}" if self.flow_id else "defaults"
        return f"{self.profile} ({scope})"


class SettingsChange(models.Model):
    """Change history of settings rows: who changed what, when (old and new values)."""

    settings = models.ForeignKey(SummarizerSettings, null=True, on_delete=models.SET_NULL, related_name="changes")
    label = models.CharField(max_length=200, help_text="which row, kept if the row is deleted")
    user = models.ForeignKey(django_settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                             related_name="+")
    source = models.CharField(max_length=32, default="admin", help_text="admin, page, env import, api")
    changes = models.JSONField(default=dict, help_text="{field: [old, new]}")
    changed_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-changed_at", "-id"]
