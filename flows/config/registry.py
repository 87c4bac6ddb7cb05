"""Defaults per profile, validation, environment import/export and the engine config of settings rows.

Each setting is declared once in `flows.core.settings_spec` (the engine's eight in `summarizer.settings.spec`).
PentAGI reads these from environment variables once at start-up; here they live in `SummarizerSettings` rows
(one per profile, plus optional per-flow overrides). On first use the default row of a profile is created
from the environment (empty = unset, as PentAGI's env library treats it), so an existing PentAGI `.env`
carries over; `settings_env_export` gives the variables back.
"""
from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Q

from flows.config.env import parse_env_text, settings_env_export, settings_env_export_rows
from flows.config.table_copy import KeyedCopy
from flows.core import AGENT, ASSISTANT, ASSISTANT_FORCED, FIELDS_BY_NAME, PROFILES, SETTINGS_FIELDS, env_fallback
from flows.engine import SUMMARIZER_SETTINGS, SettingSpec, SummarizerConfig, registered_compaction_providers
from flows.models import Flow, IdentifierPolicy, SummarizerSettings

__all__ = [
    "SETTINGS_FIELDS", "FIELDS_BY_NAME", "SettingsError", "ASSISTANT_FORCED", "defaults_for",
    "settings_for", "summarizer_config_for", "settings_validate", "settings_warnings", "settings_values",
    "settings_from_env", "settings_env_export", "settings_env_export_rows", "parse_env_text",
    "EnvImportPlan", "env_import_plan", "compaction_provider_choices", "AGENT", "ASSISTANT", "PROFILES",
]

log = logging.getLogger(__name__)


class SettingsError(ValueError):
    """Per-field validation messages: {field: message}."""

    def __init__(self, errors: dict[str, str]) -> None:
        super().__init__("; ".join(f"{k}: {v}" for k, v in errors.items()))
        self.errors = errors


def defaults_for(profile: str) -> dict[str, Any]:
    return {f.name: f.default[profile] for f in SETTINGS_FIELDS}


def settings_values(row: SummarizerSettings) -> dict[str, Any]:
    return {f.name: getattr(row, f.name) for f in SETTINGS_FIELDS}


# ----------------------------------------------------------------------------------------------- validation

def _cross_field(values: dict[str, Any]) -> dict[str, str]:
    errors = {}
    if values["keep_qa_sections"] > values["max_qa_sections"]:
        errors["keep_qa_sections"] = "cannot exceed the number of QA sections kept (max_qa_sections)"
    if values["max_active_transcript_bytes"] > 0 and not values["truncate_after_compaction"]:
        errors["max_active_transcript_bytes"] = "the byte guard needs truncate_after_compaction (successor segments)"
    if values["identifier_policy"] == IdentifierPolicy.CUSTOM and not values["identifier_instructions"]:
        errors["identifier_instructions"] = "the custom identifier policy needs instructions"
    return errors


def settings_validate(data: Mapping[str, Any], *, base: SummarizerSettings | Mapping[str, Any] | None = None,
                      profile: str | None = None) -> dict[str, Any]:
    """Cleaned values of `data` (only the fields it names); cross-field rules see them merged over `base`."""
    if not isinstance(data, Mapping):
        raise SettingsError({"settings": "expected an object of setting names to values"})
    profile = profile or getattr(base, "profile", None) or AGENT
    if isinstance(base, SummarizerSettings):
        merged = settings_values(base)
    else:
        merged = {**defaults_for(profile), **(base or {})}
    cleaned, errors = {}, {}
    for name, raw in data.items():
        spec = FIELDS_BY_NAME.get(name)
        if spec is None:
            errors[name] = "unknown setting"
            continue
        try:
            value = spec.clean(raw)
        except ValueError as exc:
            errors[name] = str(exc)
            continue
        if not spec.editable(profile) and value != ASSISTANT_FORCED[name]:
            errors[name] = f"fixed to {ASSISTANT_FORCED[name]} for the assistant"
            continue
        cleaned[name] = value
    if not errors:
        errors = _cross_field({**merged, **cleaned})
    if errors:
        raise SettingsError(errors)
    return cleaned


def settings_warnings(values: Mapping[str, Any]) -> dict[str, str]:
    """Legal but probably unintended combinations (shown, never refused)."""
    warnings = {}
    last, qa = values.get("last_sec_bytes", 0), values.get("max_qa_bytes", 0)
    # The page re-renders refused input as typed (text): only legal (whole number) values get warnings.
    if isinstance(last, int) and isinstance(qa, int) and last > qa:
        warnings["last_sec_bytes"] = "larger than max_qa_bytes: the QA collapse will summarize the recent section"
    provider = values.get("compaction_provider")
    if isinstance(provider, str) and provider and provider not in registered_compaction_providers():
        warnings["compaction_provider"] = f"no provider {provider!r} is installed: the built-in summary is used"
    return warnings


# ----------------------------------------------------------------------------------------------- environment

def _env_raw(spec: SettingSpec, profile: str, environ: Mapping[str, str]) -> tuple[str, str] | None:
    """(variable, raw value) that sets `spec` for `profile`, or None when unset (empty counts as unset)."""
    for name in (spec.env[profile], env_fallback(spec, profile)):
        if name and environ.get(name, "").strip():
            return name, environ[name]
    return None


def settings_from_env(profile: str, environ: Mapping[str, str] | None = None
                      ) -> tuple[dict[str, Any], dict[str, str], dict[str, str]]:
    """(values, {field: variable}, {variable: error}) of one profile's variables, each checked on its own."""
    environ = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    errors: dict[str, str] = {}
    for spec in SETTINGS_FIELDS:
        found = _env_raw(spec, profile, environ)
        if found is None:
            continue
        name, raw = found
        try:
            values[spec.name] = spec.clean(raw)
            sources[spec.name] = name
        except ValueError as exc:
            errors[name] = f"{name}={raw!r}: {exc}"
    return values, sources, errors


@dataclass
class EnvImportPlan:
    """What an environment import does to one profile: accepted values and each refused variable's reason."""

    profile: str
    accepted: dict[str, Any] = field(default_factory=dict)
    rejected: dict[str, str] = field(default_factory=dict)  # variable -> "NAME='raw': reason"


def env_import_plan(profile: str, environ: Mapping[str, str], base: Mapping[str, Any]) -> EnvImportPlan:
    """Validate each variable on its own, then the cross-field rules one variable at a time over `base`.

    A variable breaking a rule is refused alone and the others are kept; refused ones are retried until nothing
    changes, so a pair that is only valid together (a byte guard and its successor segments) is accepted whatever
    the declaration order.
    """
    values, sources, errors = settings_from_env(profile, environ)
    plan = EnvImportPlan(profile, rejected=dict(errors))
    for name in [n for n in values if not FIELDS_BY_NAME[n].editable(profile)]:
        forced = ASSISTANT_FORCED[name]
        if values.pop(name) != forced:
            var = sources[name]
            plan.rejected[var] = f"{var}={environ[var]!r}: fixed to {forced} for the assistant"
    pending, merged = dict(values), dict(base)
    progress = True
    while pending and progress:
        progress = False
        for name, value in list(pending.items()):
            if not _cross_field({**merged, name: value}):
                merged[name] = plan.accepted[name] = pending.pop(name)
                progress = True
    for name, value in pending.items():
        reason = _cross_field({**merged, name: value})
        message = reason.get(name) or "; ".join(reason.values())
        var = sources[name]
        plan.rejected[var] = f"{var}={environ[var]!r}: {message}"
    return plan


def _env_defaults(profile: str) -> dict[str, Any]:
    plan = env_import_plan(profile, os.environ, defaults_for(profile))
    for message in plan.rejected.values():
        log.warning("ignoring %s (default kept)", message)
    return {**defaults_for(profile), **plan.accepted}


# Settings rows as last read per (profile, flow id), see table_copy: every gateway call and summarization reads
# its chain's; an edit through this process is seen at once, another process's within TABLE_COPY_SECONDS.
SETTINGS: KeyedCopy[tuple[str, int | None], SummarizerSettings] = KeyedCopy(SummarizerSettings, "settings")


def settings_for(*, profile: str, flow: Flow | int | None = None) -> SummarizerSettings:
    """The flow's override if it has one, else the profile's defaults (created from the environment once)."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}")
    flow_id = flow.pk if isinstance(flow, Flow) else flow
    return SETTINGS.get((profile, flow_id), lambda: _settings_row(profile, flow))


def _settings_row(profile: str, flow: Flow | int | None) -> SummarizerSettings:
    scope = Q(flow__isnull=True) if flow is None else Q(flow=flow) | Q(flow__isnull=True)
    rows = list(SummarizerSettings.objects.filter(scope, profile=profile)[:2])  # one query for both
    for row in sorted(rows, key=lambda r: r.flow_id is None):  # the flow's own first
        return row
    try:
        with transaction.atomic():
            return SummarizerSettings.objects.create(profile=profile, flow=None, **_env_defaults(profile))
    except IntegrityError:  # another process created it first
        return SummarizerSettings.objects.get(profile=profile, flow__isnull=True)


def summarizer_config_for(row: SummarizerSettings) -> SummarizerConfig:
    """The pure engine's frozen config for a settings row (the profile's fixed values applied)."""
    values = {spec.name: spec.forced.get(row.profile, getattr(row, spec.name)) for spec in SUMMARIZER_SETTINGS}
    return SummarizerConfig(**values)


def compaction_provider_choices(current: str = "") -> tuple[str, ...]:
    """"" (the built-in summary) and every installed compaction provider; an unknown current value is kept."""
    installed = registered_compaction_providers()
    return ("", *installed, *([current] if current and current not in installed else []))
