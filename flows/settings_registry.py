"""What each summarizer setting is: env names per profile, defaults per profile, units, help, validation.

PentAGI reads these from environment variables once at start-up; here they live in `SummarizerSettings` rows
(one per profile, plus optional per-flow overrides). On first use the default row of a profile is created
from the environment (empty = unset, as PentAGI's env library treats it), so an existing PentAGI `.env`
carries over; `settings_env_export` gives the variables back.
"""
from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import IntegrityError, transaction

from flows.engine import SummarizerConfig
from flows.models import Flow, IdentifierPolicy, Profile, PruningMode, SummarizerSettings

__all__ = [
    "SettingField", "SETTINGS_FIELDS", "FIELDS_BY_NAME", "SettingsError", "ASSISTANT_FORCED", "defaults_for",
    "settings_for", "summarizer_config_for", "settings_validate", "settings_warnings", "settings_values",
    "settings_from_env", "settings_env_export", "parse_env_bool", "parse_env_text",
]

log = logging.getLogger(__name__)

KB = 1024
AGENT, ASSISTANT = Profile.AGENT.value, Profile.ASSISTANT.value
PROFILES = (AGENT, ASSISTANT)
# The assistant always collapses QA sections and never summarizes the user's own messages (not editable).
ASSISTANT_FORCED = {"use_qa": True, "summ_human_in_qa": False}
TRUE_WORDS = {"1", "t", "true", "y", "yes", "on"}
FALSE_WORDS = {"0", "f", "false", "n", "no", "off"}


class SettingsError(ValueError):
    """Per-field validation messages: {field: message}."""

    def __init__(self, errors: dict[str, str]) -> None:
        super().__init__("; ".join(f"{k}: {v}" for k, v in errors.items()))
        self.errors = errors


@dataclass(frozen=True)
class SettingField:
    name: str
    kind: str  # bool | int | optional_int | str | choice
    env: dict[str, str | None]  # profile -> env var name (None: no variable for that profile)
    default: dict[str, Any]  # profile -> default value
    unit: str = ""
    group: str = "summarizer"  # summarizer (PentAGI, bytes) | compaction (window fit, tokens)
    choices: tuple[str, ...] = ()

    @property
    def help(self) -> str:
        return str(SummarizerSettings._meta.get_field(self.name).help_text)

    @property
    def bounds(self) -> tuple[int | None, int | None]:
        lo = hi = None
        for validator in SummarizerSettings._meta.get_field(self.name).validators:
            if isinstance(validator, MinValueValidator):
                lo = validator.limit_value
            elif isinstance(validator, MaxValueValidator):
                hi = validator.limit_value
        return lo, hi

    def editable(self, profile: str) -> bool:
        return not (profile == ASSISTANT and self.name in ASSISTANT_FORCED)


def _pentagi(name: str, kind: str, suffix: str, agent: Any, assistant: Any, unit: str = "",
             assistant_env: bool = True) -> SettingField:
    return SettingField(name, kind, {AGENT: f"SUMMARIZER_{suffix}",
                                     ASSISTANT: f"ASSISTANT_SUMMARIZER_{suffix}" if assistant_env else None},
                        {AGENT: agent, ASSISTANT: assistant}, unit)


def _compaction(name: str, kind: str, default: Any, unit: str = "", choices: tuple[str, ...] = ()) -> SettingField:
    env = "COMPACTION_" + name.removeprefix("compaction_").upper()  # COMPACTION_ENABLED, not ..._COMPACTION_...
    return SettingField(name, kind, {AGENT: env, ASSISTANT: env}, {AGENT: default, ASSISTANT: default}, unit,
                        "compaction", choices)


SETTINGS_FIELDS: tuple[SettingField, ...] = (
    _pentagi("preserve_last", "bool", "PRESERVE_LAST", True, True),
    _pentagi("use_qa", "bool", "USE_QA", True, True, assistant_env=False),
    _pentagi("summ_human_in_qa", "bool", "SUM_MSG_HUMAN_IN_QA", False, False, assistant_env=False),
    _pentagi("last_sec_bytes", "int", "LAST_SEC_BYTES", 50 * KB, 75 * KB, "bytes"),
    _pentagi("max_bp_bytes", "int", "MAX_BP_BYTES", 16 * KB, 16 * KB, "bytes"),
    _pentagi("max_qa_sections", "int", "MAX_QA_SECTIONS", 10, 7, "sections"),
    _pentagi("max_qa_bytes", "int", "MAX_QA_BYTES", 64 * KB, 75 * KB, "bytes"),
    _pentagi("keep_qa_sections", "int", "KEEP_QA_SECTIONS", 1, 3, "sections"),
    _compaction("compaction_enabled", "bool", True),
    _compaction("reserve_tokens", "optional_int", None, "tokens"),
    _compaction("keep_recent_tokens", "int", 20_000, "tokens"),
    _compaction("identifier_policy", "choice", IdentifierPolicy.STRICT.value, choices=tuple(IdentifierPolicy.values)),
    _compaction("identifier_instructions", "str", ""),
    _compaction("compaction_model", "str", ""),
    _compaction("fallback_models", "str", ""),
    _compaction("compaction_provider", "str", ""),
    _compaction("max_active_transcript_bytes", "int", 0, "bytes"),
    _compaction("truncate_after_compaction", "bool", False),
    _compaction("memory_flush", "bool", True),
    _compaction("notify_user", "bool", True),
    _compaction("pruning_mode", "choice", PruningMode.OFF.value, choices=tuple(PruningMode.values)),
    _compaction("prune_keep_last_assistants", "int", 3, "assistant messages"),
    _compaction("prune_tools_allow", "str", ""),
    _compaction("prune_tools_deny", "str", ""),
    SettingField("gateway_mode", "choice", {AGENT: "GATEWAY_MODE", ASSISTANT: "GATEWAY_MODE"},
                 {AGENT: "manage", ASSISTANT: "manage"}, "", "compaction", ("observe", "manage")),
)
FIELDS_BY_NAME = {f.name: f for f in SETTINGS_FIELDS}


def defaults_for(profile: str) -> dict[str, Any]:
    return {f.name: f.default[profile] for f in SETTINGS_FIELDS}


def settings_values(row: SummarizerSettings) -> dict[str, Any]:
    return {f.name: getattr(row, f.name) for f in SETTINGS_FIELDS}


# ----------------------------------------------------------------------------------------------- coercion

def parse_env_bool(raw: Any) -> bool:
    if isinstance(raw, bool):
        return raw
    word = str(raw).strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise ValueError("expected true or false")


def _coerce(spec: SettingField, raw: Any) -> Any:
    if spec.kind == "bool":
        return parse_env_bool(raw)
    if spec.kind in ("int", "optional_int"):
        if spec.kind == "optional_int" and (raw is None or (isinstance(raw, str) and not raw.strip())):
            return None
        if isinstance(raw, bool) or isinstance(raw, float) and not raw.is_integer():
            raise ValueError("expected a whole number")
        try:
            value = int(str(raw).strip()) if isinstance(raw, str) else int(raw)
        except (TypeError, ValueError):
            raise ValueError("expected a whole number") from None
        lo, hi = spec.bounds
        if value < (lo if lo is not None else 0):
            raise ValueError(f"must be at least {lo if lo is not None else 0}")
        if hi is not None and value > hi:
            raise ValueError(f"must be at most {hi}")
        return value
    if raw is None:
        raw = ""
    if not isinstance(raw, str):
        raise ValueError("expected text")
    value = raw.strip()
    if "\x00" in value:  # PostgreSQL text columns cannot store it: refuse it on every database alike
        raise ValueError("must not contain NUL characters")
    if spec.kind == "choice" and value not in spec.choices:
        raise ValueError(f"must be one of {', '.join(spec.choices)}")
    max_length = SummarizerSettings._meta.get_field(spec.name).max_length
    if max_length and len(value) > max_length:
        raise ValueError(f"at most {max_length} characters")
    return value


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
            value = _coerce(spec, raw)
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
    return warnings


# ----------------------------------------------------------------------------------------------- environment

def settings_from_env(profile: str, environ: Mapping[str, str] | None = None) -> tuple[dict[str, Any], dict[str, str]]:
    """(values set in the environment, {field: error}) for one profile; empty variables count as unset."""
    environ = os.environ if environ is None else environ
    values, errors = {}, {}
    for spec in SETTINGS_FIELDS:
        name = spec.env[profile]
        raw = environ.get(name, "") if name else ""
        if name is None or not raw.strip():
            continue
        try:
            values[spec.name] = _coerce(spec, raw)
        except ValueError as exc:
            errors[spec.name] = f"{name}={raw!r}: {exc}"
    return values, errors


def _env_defaults(profile: str) -> dict[str, Any]:
    values, errors = settings_from_env(profile)
    for field_name, message in errors.items():
        log.warning("ignoring %s (default kept)", message)
    merged = {**defaults_for(profile), **values}
    bad = _cross_field(merged)
    if bad:
        log.warning("environment settings for %s break %s; using the defaults", profile, bad)
        return defaults_for(profile)
    return merged


def settings_for(*, profile: str, flow: Flow | int | None = None) -> SummarizerSettings:
    """The flow's override if it has one, else the profile's defaults (created from the environment once)."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}")
    if flow is not None:
        override = SummarizerSettings.objects.filter(profile=profile, flow=flow).first()
        if override is not None:
            return override
    row = SummarizerSettings.objects.filter(profile=profile, flow__isnull=True).first()
    if row is not None:
        return row
    try:
        with transaction.atomic():
            return SummarizerSettings.objects.create(profile=profile, flow=None, **_env_defaults(profile))
    except IntegrityError:  # another process created it first
        return SummarizerSettings.objects.get(profile=profile, flow__isnull=True)


def summarizer_config_for(row: SummarizerSettings):
    """The pure engine's frozen config for a settings row (assistant's fixed values applied)."""
    values = {name: getattr(row, name) for name in (
        "preserve_last", "use_qa", "summ_human_in_qa", "last_sec_bytes", "max_bp_bytes", "max_qa_sections",
        "max_qa_bytes", "keep_qa_sections")}
    if row.profile == ASSISTANT:
        values.update(ASSISTANT_FORCED)
    return SummarizerConfig(**values)


def _env_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    text = str(value)
    if any(ch in text for ch in " #\"'\\\n\t"):
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    return text


def settings_env_export(row: SummarizerSettings) -> str:
    """The row as `.env` lines (PentAGI's variable names), with each setting's help as a comment."""
    scope = f"flow #{row.flow_id}" if row.flow_id else "defaults"
    lines = [f"# pentagi-web summarizer settings: profile {row.profile} ({scope})"]
    for spec in SETTINGS_FIELDS:
        name = spec.env[row.profile]
        if name is None:
            continue
        unit = f" [{spec.unit}]" if spec.unit else ""
        lines.append(f"# {spec.help}{unit}".replace("\n", " "))
        lines.append(f"{name}={_env_value(getattr(row, spec.name))}")
    return "\n".join(lines) + "\n"


def parse_env_text(text: str) -> dict[str, str]:
    """`NAME=value` lines of a .env file (comments, blanks and `export ` prefixes allowed; quotes undone)."""
    out = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        name, value = line.removeprefix("export ").split("=", 1)
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), value[1:-1])
        elif len(value) >= 2 and value[0] == value[-1] == "'":
            value = value[1:-1]
        out[name.strip()] = value
    return out
