"""Settings rows as `.env` text and back.

A `.env` file holds one value per variable, and PentAGI has no per-flow variables, so an export of several rows
defines each variable once: per profile, the first row (the defaults when selected, else the lowest flow) is
written as assignments and every other row of that profile follows as a commented-out section. Each profile
uses its own names: `SUMMARIZER_*` / `COMPACTION_*` for agents, `ASSISTANT_SUMMARIZER_*` /
`ASSISTANT_COMPACTION_*` for the assistant, so both profiles fit in one file.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Protocol

from flows.core import ASSISTANT, PROFILES, SETTINGS_FIELDS, env_fallback
from flows.engine import SettingSpec

__all__ = ["settings_env_export", "settings_env_export_rows", "parse_env_text", "env_value"]

_NEEDS_QUOTES = " #\"'\\\n\t"


class SettingsRow(Protocol):
    profile: str
    flow_id: int | None


def env_value(value: Any) -> str:
    """A value as PentAGI's env loader reads it back (bools as true/false, None as empty, quoted when needed)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    text = str(value)
    if any(ch in text for ch in _NEEDS_QUOTES):
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    return text


def _scope(row: SettingsRow) -> str:
    return f"override for flow #{row.flow_id}" if row.flow_id else "defaults"


def _comment(spec: SettingSpec, profile: str) -> str:
    unit = f" [{spec.unit}]" if spec.unit else ""
    fallback = env_fallback(spec, profile)
    also = f" Unset: {fallback} applies." if fallback else ""
    return f"# {spec.help}{unit}{also}".replace("\n", " ")


def _row_lines(row: SettingsRow, *, active: bool) -> list[str]:
    profile = row.profile
    prefixes = "ASSISTANT_SUMMARIZER_* and ASSISTANT_COMPACTION_*" if profile == ASSISTANT else \
        "SUMMARIZER_* and COMPACTION_*"
    lines = [f"# ===== profile {profile}, {_scope(row)}: {prefixes} ====="]
    if not active:
        lines.append("# Commented out: a .env holds one value per variable. To use this section instead, uncomment "
                     "it and comment out the active one.")
    for spec in SETTINGS_FIELDS:
        name = spec.env[profile]
        if name is None:
            lines.append(f"# {spec.name} is fixed to {env_value(spec.forced[profile])} for the {profile} "
                         "(PentAGI has no variable for it)")
            continue
        lines.append(_comment(spec, profile))
        assignment = f"{name}={env_value(getattr(row, spec.name))}"
        lines.append(assignment if active else f"# {assignment}")
    return lines


def settings_env_export(row: SettingsRow) -> str:
    """One row as `.env` lines in its profile's variable names, each with its help as a comment."""
    return "\n".join(_row_lines(row, active=True)) + "\n"


def settings_env_export_rows(rows: Iterable[SettingsRow]) -> str:
    """Several rows in one `.env` that defines each variable at most once (see the module docstring)."""
    ordered = sorted(rows, key=lambda r: (PROFILES.index(r.profile), r.flow_id is not None, r.flow_id or 0))
    seen: set[str] = set()
    sections = []
    for row in ordered:
        sections.append("\n".join(_row_lines(row, active=row.profile not in seen)))
        seen.add(row.profile)
    return "\n\n".join(sections) + "\n" if sections else ""


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
