"""Settings that PentAGI reads from environment variables, as admin-editable rows.

One row per profile (agent, assistant) with `flow` empty holds the defaults; a row with `flow` set overrides
them for that flow. Field defaults are the agent profile's; `flows.settings_registry` knows the assistant's
defaults, env names, units and help texts, and the validation rules.
"""
from __future__ import annotations

from django.conf import settings as django_settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from .chains import Flow, Profile

KB = 1024
# Smallest byte limit accepted: PentAGI has none, and tiny limits are how one watches the algorithm work
# (its own tests use 200-byte sections); below this a single header no longer fits and nothing is gained.
MIN_BYTES = 64


class IdentifierPolicy(models.TextChoices):
    STRICT = "strict"
    OFF = "off"
    CUSTOM = "custom"


class PruningMode(models.TextChoices):
    OFF = "off"
    ON = "on"


class SummarizerSettings(models.Model):
    profile = models.CharField(max_length=16, choices=Profile.choices, default=Profile.AGENT)
    flow = models.ForeignKey(Flow, null=True, blank=True, on_delete=models.CASCADE, related_name="settings_overrides",
                             help_text="Empty: the profile's defaults. Set: an override for that flow only.")

    # --- PentAGI chain summarizer (bytes, never tokens) ---
    preserve_last = models.BooleanField(
        default=True, help_text="Manage the size of the most recent sections (SUMMARIZER_PRESERVE_LAST). "
        "Off: recent sections have no size limit and the per-tool-result limit does not apply.")
    use_qa = models.BooleanField(
        default=True, help_text="Collapse old question/answer sections into one summary section "
        "(SUMMARIZER_USE_QA; agents only, the assistant always uses it).")
    summ_human_in_qa = models.BooleanField(
        default=False, help_text="Also summarize the user's own messages in the QA collapse "
        "(SUMMARIZER_SUM_MSG_HUMAN_IN_QA; agents only, never for the assistant).")
    last_sec_bytes = models.PositiveIntegerField(
        default=50 * KB, validators=[MinValueValidator(MIN_BYTES), MaxValueValidator(64 * KB * KB)],
        help_text="Size limit of the recent section, in bytes (SUMMARIZER_LAST_SEC_BYTES).")
    max_bp_bytes = models.PositiveIntegerField(
        default=16 * KB, validators=[MinValueValidator(MIN_BYTES), MaxValueValidator(64 * KB * KB)],
        help_text="Largest single body pair (tool call + result) kept whole in recent sections, in bytes "
        "(SUMMARIZER_MAX_BP_BYTES).")
    max_qa_sections = models.PositiveIntegerField(
        default=10, validators=[MinValueValidator(1), MaxValueValidator(1000)],
        help_text="Question/answer sections kept before older ones are collapsed (SUMMARIZER_MAX_QA_SECTIONS).")
    max_qa_bytes = models.PositiveIntegerField(
        default=64 * KB, validators=[MinValueValidator(MIN_BYTES), MaxValueValidator(64 * KB * KB)],
        help_text="Total size of the kept sections, in bytes, system prompt included (SUMMARIZER_MAX_QA_BYTES).")
    keep_qa_sections = models.PositiveIntegerField(
        default=1, validators=[MinValueValidator(1), MaxValueValidator(100)],
        help_text="Most recent sections never merged into a summary (SUMMARIZER_KEEP_QA_SECTIONS).")

    # --- Compaction: fitting the model's window (tokens) ---
    compaction_enabled = models.BooleanField(
        default=True, help_text="Fit the view to the model's window before each call and recover from "
        "context-overflow errors (COMPACTION_ENABLED).")
    reserve_tokens = models.PositiveIntegerField(
        null=True, blank=True, validators=[MaxValueValidator(1_000_000)],
        help_text="Tokens reserved for the model's answer. Empty: the model's max output, at most 20% of the "
        "window (COMPACTION_RESERVE_TOKENS).")
    keep_recent_tokens = models.PositiveIntegerField(
        default=20_000, validators=[MinValueValidator(0), MaxValueValidator(1_000_000)],
        help_text="Recent tokens kept verbatim by a window cut, never more than half the window "
        "(COMPACTION_KEEP_RECENT_TOKENS). 0 with manual compaction: a hard checkpoint.")
    identifier_policy = models.CharField(
        max_length=16, choices=IdentifierPolicy.choices, default=IdentifierPolicy.STRICT,
        help_text="strict: summaries must keep IDs, hashes, hosts, URLs, paths (audited, one retry); off: no "
        "guidance; custom: your instructions below (COMPACTION_IDENTIFIER_POLICY).")
    identifier_instructions = models.TextField(
        blank=True, default="", max_length=2000,
        help_text="Custom identifier guidance, used with policy 'custom' (COMPACTION_IDENTIFIER_INSTRUCTIONS).")
    compaction_model = models.CharField(
        max_length=200, blank=True, default="",
        help_text="provider/model that writes compaction summaries, e.g. openai/gpt-4o-mini. Empty: the "
        "agent's model with the fallback models below. An explicit model never falls back (COMPACTION_MODEL).")
    fallback_models = models.CharField(
        max_length=1000, blank=True, default="",
        help_text="Comma-separated models tried in order on retryable provider errors when no compaction "
        "model is set (COMPACTION_FALLBACK_MODELS).")
    compaction_provider = models.CharField(
        max_length=100, blank=True, default="",
        help_text="Id of a registered compaction provider plugin; on error or empty output the built-in "
        "summary is used (COMPACTION_PROVIDER).")
    max_active_transcript_bytes = models.PositiveIntegerField(
        default=0, validators=[MaxValueValidator(1024 * KB * KB)],
        help_text="Byte guard: compact before a turn once the active segment reaches this size; 0 = off. "
        "Needs successor segments (COMPACTION_MAX_ACTIVE_TRANSCRIPT_BYTES).")
    truncate_after_compaction = models.BooleanField(
        default=False, help_text="After a compaction, start a new active segment from the summary and kept "
        "tail; the old one is archived unchanged (COMPACTION_TRUNCATE_AFTER_COMPACTION).")
    memory_flush = models.BooleanField(
        default=True, help_text="Save identifiers, credentials, hosts and decisions that leave the view as "
        "flow notes before compacting (COMPACTION_MEMORY_FLUSH).")
    notify_user = models.BooleanField(
        default=True, help_text="Show 'compaction started / complete' notices in the live view "
        "(COMPACTION_NOTIFY_USER).")
    pruning_mode = models.CharField(
        max_length=8, choices=PruningMode.choices, default=PruningMode.OFF,
        help_text="Trim old tool results in the request sent to the model (never stored) (COMPACTION_PRUNING_MODE).")
    prune_keep_last_assistants = models.PositiveIntegerField(
        default=3, validators=[MaxValueValidator(100)],
        help_text="Tool results of the last N assistant messages are never pruned (COMPACTION_PRUNE_KEEP_LAST_ASSISTANTS).")
    prune_tools_allow = models.CharField(
        max_length=500, blank=True, default="",
        help_text="Comma-separated tool name globs that may be pruned; empty = all (COMPACTION_PRUNE_TOOLS_ALLOW).")
    prune_tools_deny = models.CharField(
        max_length=500, blank=True, default="",
        help_text="Comma-separated tool name globs never pruned; deny wins (COMPACTION_PRUNE_TOOLS_DENY).")
    gateway_mode = models.CharField(
        max_length=8, choices=[("observe", "observe"), ("manage", "manage")], default="manage",
        help_text="What /v1/chat/completions forwards: 'manage' the summarized view fitted to the window, "
        "'observe' the agent's request untouched; a request may override it with X-Gateway-Mode (GATEWAY_MODE).")

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
