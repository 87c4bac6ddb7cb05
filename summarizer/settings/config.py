"""Summarizer settings: one frozen object, PentAGI's three profiles and its environment variables.

Zero or negative sizes get PentAGI's constructor defaults (so an empty settings form behaves like an
unset environment variable). The last-section reserve is a constant in PentAGI; here it is a field whose
0 means "no reserve" (Resolution 1).
"""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from summarizer.settings.spec import AGENT, ASSISTANT, SUMMARIZER_SETTINGS, parse_bool

__all__ = [
    "SummarizerConfig", "LAST_SEC_BYTES", "MAX_BP_BYTES", "MAX_QA_SECTIONS", "MAX_QA_BYTES", "KEEP_QA_SECTIONS",
    "LAST_SECTION_RESERVE_PERCENT", "AGENT_ENV_PREFIX", "ASSISTANT_ENV_PREFIX", "env_names", "parse_env_bool",
]

_SPECS = {spec.name: spec for spec in SUMMARIZER_SETTINGS}
# The agent profile's defaults, named (they are also PentAGI's constructor defaults for sizes <= 0).
LAST_SEC_BYTES: int = _SPECS["last_sec_bytes"].default[AGENT]
MAX_BP_BYTES: int = _SPECS["max_bp_bytes"].default[AGENT]
MAX_QA_SECTIONS: int = _SPECS["max_qa_sections"].default[AGENT]
MAX_QA_BYTES: int = _SPECS["max_qa_bytes"].default[AGENT]
KEEP_QA_SECTIONS: int = _SPECS["keep_qa_sections"].default[AGENT]
LAST_SECTION_RESERVE_PERCENT = 25

AGENT_ENV_PREFIX = "SUMMARIZER_"
ASSISTANT_ENV_PREFIX = "ASSISTANT_SUMMARIZER_"
# Field -> env suffix, from the declarations (PentAGI spells the human-in-QA switch "SUM_MSG_HUMAN_IN_QA").
_ENV_SUFFIX = {spec.name: str(spec.env[AGENT]).removeprefix(AGENT_ENV_PREFIX) for spec in SUMMARIZER_SETTINGS}
_ASSISTANT_FORCED = {spec.name: spec.forced[ASSISTANT] for spec in SUMMARIZER_SETTINGS if ASSISTANT in spec.forced}
_BOOL_FIELDS = tuple(spec.name for spec in SUMMARIZER_SETTINGS if spec.kind == "bool")
_INT_FIELDS = (*(spec.name for spec in SUMMARIZER_SETTINGS if spec.kind == "int"), "last_section_reserve_percent")


@dataclass(frozen=True)
class SummarizerConfig:
    """PentAGI's summarizer config; the defaults are the agent profile."""

    preserve_last: bool = True
    use_qa: bool = True
    summ_human_in_qa: bool = False
    last_sec_bytes: int = LAST_SEC_BYTES
    max_bp_bytes: int = MAX_BP_BYTES
    max_qa_sections: int = MAX_QA_SECTIONS
    max_qa_bytes: int = MAX_QA_BYTES
    keep_qa_sections: int = KEEP_QA_SECTIONS
    last_section_reserve_percent: int = LAST_SECTION_RESERVE_PERCENT

    def __post_init__(self) -> None:
        for name in _BOOL_FIELDS:
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be a bool, got {getattr(self, name)!r}")
        for name in _INT_FIELDS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{name} must be an int, got {value!r}")
        if not 0 <= self.last_section_reserve_percent <= 100:
            raise ValueError("last_section_reserve_percent must be between 0 and 100")
        for name, value in self._defaulted().items():
            object.__setattr__(self, name, value)

    def _defaulted(self) -> dict[str, int]:
        """PentAGI's NewSummarizer: zero/negative sizes become defaults (some only when their switch is on)."""
        out: dict[str, int] = {}
        if self.preserve_last and self.last_sec_bytes <= 0:
            out["last_sec_bytes"] = LAST_SEC_BYTES
        if self.use_qa and self.max_qa_sections <= 0:
            out["max_qa_sections"] = MAX_QA_SECTIONS
        if self.use_qa and self.max_qa_bytes <= 0:
            out["max_qa_bytes"] = MAX_QA_BYTES
        if self.max_bp_bytes <= 0:
            out["max_bp_bytes"] = MAX_BP_BYTES
        if self.keep_qa_sections <= 0:
            out["keep_qa_sections"] = KEEP_QA_SECTIONS
        return out

    @classmethod
    def agent(cls) -> SummarizerConfig:
        """Every flow agent and the sub-agents an assistant spawns (SUMMARIZER_* defaults)."""
        return cls()

    @classmethod
    def assistant(cls) -> SummarizerConfig:
        """The interactive assistant's own chain: more recent history kept (ASSISTANT_SUMMARIZER_* defaults)."""
        return cls(**{spec.name: spec.default[ASSISTANT] for spec in SUMMARIZER_SETTINGS})

    @classmethod
    def restore(cls) -> SummarizerConfig:
        """The fixed aggressive profile PentAGI applies when it restores a chain for a new task."""
        return cls(preserve_last=True, use_qa=True, summ_human_in_qa=True, last_sec_bytes=16 * 1024,
                   max_bp_bytes=8 * 1024, max_qa_sections=3, max_qa_bytes=20 * 1024, keep_qa_sections=1)

    @classmethod
    def from_env(cls, prefix: str = AGENT_ENV_PREFIX,
                 environ: Mapping[str, str] | None = None) -> SummarizerConfig:
        """Read PentAGI's variables; empty means unset. The assistant prefix forces use_qa on and
        summ_human_in_qa off, as PentAGI has no variables for them."""
        env = os.environ if environ is None else environ
        assistant = prefix == ASSISTANT_ENV_PREFIX
        base = cls.assistant() if assistant else cls.agent()
        changes: dict[str, Any] = {}
        for name, var in env_names(prefix).items():
            raw = env.get(var, "")
            if raw == "":
                continue
            try:
                changes[name] = _SPECS[name].convert(raw)
            except ValueError as exc:
                raise ValueError(f"{var}={raw!r}: {exc}") from None
        if assistant:
            changes.update(_ASSISTANT_FORCED)
        return dataclasses.replace(base, **changes)

    def replace(self, **changes: Any) -> SummarizerConfig:
        return dataclasses.replace(self, **changes)

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def env_names(prefix: str = AGENT_ENV_PREFIX) -> dict[str, str]:
    """Field -> environment variable for a prefix; the assistant has no variables for the forced switches."""
    names = {field: prefix + suffix for field, suffix in _ENV_SUFFIX.items()}
    if prefix == ASSISTANT_ENV_PREFIX:
        for field in _ASSISTANT_FORCED:
            del names[field]
    return names


def parse_env_bool(var: str, raw: str) -> bool:
    """Go's strconv.ParseBool, which PentAGI's env loader uses (the one parser of `summarizer.settings.spec`)."""
    try:
        return parse_bool(raw)
    except ValueError as exc:
        raise ValueError(f"{var}={raw!r}: {exc}") from None
