"""One declaration per setting: name, environment variable per profile, unit, default per profile, bounds, help.

`SummarizerConfig.from_env`, the CLI and the dashboard (model fields, registry, env import/export, settings
page, admin) all read these declarations, so a setting is described once. The dashboard extends the tuple
with its compaction settings (`flows/core/settings_spec.py`); the engine's own eight are declared here.

Values from the environment go through `parse_bool` (Go's `strconv.ParseBool`, which PentAGI's env loader
uses) and a plain integer parser; the dashboard additionally applies the bounds (`SettingSpec.clean`).
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "AGENT", "ASSISTANT", "PROFILES", "SettingSpec", "SUMMARIZER_SETTINGS", "parse_bool", "parse_int",
    "TRUE_WORDS", "FALSE_WORDS", "MIN_BYTES", "KB",
]

AGENT, ASSISTANT = "agent", "assistant"
PROFILES = (AGENT, ASSISTANT)
KB = 1024
# Smallest byte limit the dashboard accepts: PentAGI has none, and tiny limits are how one watches the algorithm
# work (its own tests use 200-byte sections); below this a single header no longer fits and nothing is gained.
MIN_BYTES = 64
MAX_BYTES = 64 * KB * KB

# Go's strconv.ParseBool accepts exactly these spellings; anything else ("yes", "on", " true") is an error.
TRUE_WORDS = frozenset({"1", "t", "T", "TRUE", "true", "True"})
FALSE_WORDS = frozenset({"0", "f", "F", "FALSE", "false", "False"})
_INT_RE = re.compile(r"[+-]?\d+")
KINDS = ("bool", "int", "optional_int", "str", "choice")


def parse_bool(raw: object) -> bool:
    """Go's strconv.ParseBool (what PentAGI's env loader uses); a Python bool passes through."""
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, str):
        if raw in TRUE_WORDS:
            return True
        if raw in FALSE_WORDS:
            return False
    raise ValueError("expected true or false (1, t, T, TRUE, true, True or 0, f, F, FALSE, false, False)")


def parse_int(raw: object) -> int:
    """A whole number from text (surrounding blanks ignored) or an int; bools and fractions are refused."""
    if isinstance(raw, bool):
        raise ValueError("expected a whole number")
    if isinstance(raw, int):
        return raw
    if isinstance(raw, float) and raw.is_integer():
        return int(raw)
    if isinstance(raw, str) and _INT_RE.fullmatch(raw.strip()):
        return int(raw.strip())
    raise ValueError("expected a whole number")


@dataclass(frozen=True)
class SettingSpec:
    """One setting. `env[profile]` is None when that profile has no variable; `forced[profile]` fixes a value
    (not editable) for that profile."""

    name: str
    kind: str  # bool | int | optional_int | str | choice
    env: Mapping[str, str | None]
    default: Mapping[str, Any]
    help: str
    unit: str = ""
    minimum: int | None = None
    maximum: int | None = None
    group: str = "summarizer"  # summarizer (PentAGI, bytes) | compaction (window fit, tokens)
    choices: tuple[str, ...] = ()
    max_length: int | None = None
    forced: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"{self.name}: unknown kind {self.kind!r}")

    @property
    def bounds(self) -> tuple[int | None, int | None]:
        return self.minimum, self.maximum

    def editable(self, profile: str) -> bool:
        return profile not in self.forced

    def env_name(self, profile: str) -> str | None:
        return self.env.get(profile)

    def convert(self, raw: object) -> Any:
        """Type conversion only (what PentAGI's env loader does): no bounds, no choices."""
        if self.kind == "bool":
            return parse_bool(raw)
        if self.kind == "optional_int" and (raw is None or (isinstance(raw, str) and not raw.strip())):
            return None
        if self.kind in ("int", "optional_int"):
            return parse_int(raw)
        if raw is None:
            return ""
        if not isinstance(raw, str):
            raise ValueError("expected text")
        return raw.strip()

    def check(self, value: Any) -> Any:
        """The dashboard's bounds, choices and lengths on a converted value; returns it unchanged."""
        if isinstance(value, int) and not isinstance(value, bool):
            low = self.minimum if self.minimum is not None else 0
            if value < low:
                raise ValueError(f"must be at least {low}")
            if self.maximum is not None and value > self.maximum:
                raise ValueError(f"must be at most {self.maximum}")
        elif isinstance(value, str):
            if "\x00" in value:  # PostgreSQL text columns cannot store it: refused on every database alike
                raise ValueError("must not contain NUL characters")
            if self.kind == "choice" and value not in self.choices:
                raise ValueError(f"must be one of {', '.join(self.choices)}")
            if self.max_length is not None and len(value) > self.max_length:
                raise ValueError(f"at most {self.max_length} characters")
        return value

    def clean(self, raw: object) -> Any:
        return self.check(self.convert(raw))


def _pentagi(name: str, kind: str, suffix: str, agent: Any, assistant: Any, help_text: str, *, unit: str = "",
             minimum: int | None = None, maximum: int | None = None, assistant_forced: bool = False) -> SettingSpec:
    """A PentAGI variable: SUMMARIZER_<suffix> for agents, ASSISTANT_SUMMARIZER_<suffix> for the assistant
    (which has no variable for the two switches it always forces)."""
    assistant_env = None if assistant_forced else f"ASSISTANT_SUMMARIZER_{suffix}"
    return SettingSpec(name, kind, {AGENT: f"SUMMARIZER_{suffix}", ASSISTANT: assistant_env},
                       {AGENT: agent, ASSISTANT: assistant}, help_text, unit, minimum, maximum,
                       forced={ASSISTANT: assistant} if assistant_forced else {})


# PentAGI's own table (pentagi-summarizer.md §4): agent and assistant defaults, variable names.
SUMMARIZER_SETTINGS: tuple[SettingSpec, ...] = (
    _pentagi("preserve_last", "bool", "PRESERVE_LAST", True, True,
             "Manage the size of the most recent sections. Off: recent sections have no size limit and the "
             "per-tool-result limit does not apply."),
    _pentagi("use_qa", "bool", "USE_QA", True, True,
             "Collapse old question/answer sections into one summary section (agents only, the assistant "
             "always uses it).", assistant_forced=True),
    _pentagi("summ_human_in_qa", "bool", "SUM_MSG_HUMAN_IN_QA", False, False,
             "Also summarize the user's own messages in the QA collapse (agents only, never for the assistant).",
             assistant_forced=True),
    _pentagi("last_sec_bytes", "int", "LAST_SEC_BYTES", 50 * KB, 75 * KB,
             "Size limit of the recent section.", unit="bytes", minimum=MIN_BYTES, maximum=MAX_BYTES),
    _pentagi("max_bp_bytes", "int", "MAX_BP_BYTES", 16 * KB, 16 * KB,
             "Largest single body pair (tool call + result) kept whole in recent sections.", unit="bytes",
             minimum=MIN_BYTES, maximum=MAX_BYTES),
    _pentagi("max_qa_sections", "int", "MAX_QA_SECTIONS", 10, 7,
             "Question/answer sections kept before older ones are collapsed.", unit="sections",
             minimum=1, maximum=1000),
    _pentagi("max_qa_bytes", "int", "MAX_QA_BYTES", 64 * KB, 75 * KB,
             "Total size of the kept sections, system prompt included.", unit="bytes", minimum=MIN_BYTES,
             maximum=MAX_BYTES),
    _pentagi("keep_qa_sections", "int", "KEEP_QA_SECTIONS", 1, 3,
             "Most recent sections never merged into a summary.", unit="sections", minimum=1, maximum=100),
)
