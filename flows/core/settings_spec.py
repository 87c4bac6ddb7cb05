"""Every setting of a `SummarizerSettings` row, declared once (no Django here, so models can derive from it).

The engine's eight PentAGI settings come from `summarizer.settings.spec`; the dashboard adds its compaction
settings (window fit, tokens). Their variables are `COMPACTION_<NAME>` for agents and
`ASSISTANT_COMPACTION_<NAME>` for the assistant, following PentAGI's `ASSISTANT_SUMMARIZER_*` pattern (PentAGI
itself has no compaction variables). When importing, an assistant variable that is unset falls back to the
shared `COMPACTION_<NAME>`, so one `COMPACTION_*` line still configures both profiles.
"""
from __future__ import annotations

from typing import Any

from flows.engine import DEFAULT_INPUT_TOKENS, STRATEGIES, SUMMARIZER_SETTINGS, SettingSpec, parse_bool

__all__ = [
    "AGENT", "ASSISTANT", "PROFILES", "SettingSpec", "SETTINGS_FIELDS", "FIELDS_BY_NAME", "ASSISTANT_FORCED",
    "IDENTIFIER_POLICIES", "PRUNING_MODES", "SUMMARY_FALLBACKS", "STRATEGIES", "parse_bool", "env_fallback",
    "model_help",
]

AGENT, ASSISTANT = PROFILES = ("agent", "assistant")  # the keys of every SettingSpec's env and default
KB = 1024
IDENTIFIER_POLICIES = ("strict", "off", "custom")
PRUNING_MODES = ("off", "on")
GATEWAY_MODES = ("manage", "observe")
SUMMARY_FALLBACKS = ("offline", "fail")
PENTAGI, WINDOW = STRATEGIES
ASSISTANT_COMPACTION_PREFIX = "ASSISTANT_"


def _compaction(name: str, kind: str, default: Any, help_text: str, *, unit: str = "", minimum: int | None = None,
                maximum: int | None = None, choices: tuple[str, ...] = (),
                max_length: int | None = None) -> SettingSpec:
    env = "COMPACTION_" + name.removeprefix("compaction_").upper()  # COMPACTION_ENABLED, not ..._COMPACTION_...
    return SettingSpec(name, kind, {AGENT: env, ASSISTANT: ASSISTANT_COMPACTION_PREFIX + env},
                       {AGENT: default, ASSISTANT: default}, help_text, unit, minimum, maximum, "compaction",
                       choices, max_length)


def _gateway(name: str, kind: str, default: Any, help_text: str, *, unit: str = "", minimum: int | None = None,
             maximum: int | None = None, choices: tuple[str, ...] = ()) -> SettingSpec:
    """A gateway setting: variable GATEWAY_<NAME> (assistant: ASSISTANT_GATEWAY_<NAME>, unset: GATEWAY_<NAME>)."""
    env = "GATEWAY_" + name.upper()
    return SettingSpec(name, kind, {AGENT: env, ASSISTANT: ASSISTANT_COMPACTION_PREFIX + env},
                       {AGENT: default, ASSISTANT: default}, help_text, unit, minimum, maximum, "compaction",
                       choices, 16 if choices else None)


COMPACTION_SETTINGS: tuple[SettingSpec, ...] = (
    _compaction("compaction_enabled", "bool", True,
                "Fit the view to the model's window before each call and recover from context-overflow errors."),
    _compaction("reserve_tokens", "optional_int", None,
                "Tokens reserved for the model's answer. Empty: the model's max output, at most 20% of the window; "
                "a reserve as large as the window is halved.", unit="tokens", maximum=1_000_000),
    _compaction("keep_recent_tokens", "int", 20_000,
                "Recent tokens kept verbatim by a window cut, never more than half the window. 0 with manual "
                "compaction: a hard checkpoint.", unit="tokens", minimum=0, maximum=1_000_000),
    _compaction("identifier_policy", "choice", "strict",
                "strict: summaries must keep IDs, hashes, hosts, URLs, paths (audited, one retry); off: no "
                "guidance; custom: your instructions below.", choices=IDENTIFIER_POLICIES, max_length=16),
    _compaction("identifier_instructions", "str", "",
                "Custom identifier guidance, used with policy 'custom'.", max_length=2000),
    _compaction("compaction_model", "str", "",
                "provider/model that writes compaction summaries, e.g. openai/gpt-4o-mini. Empty: the agent's "
                "model with the fallback models below. An explicit model never falls back.", max_length=200),
    _compaction("fallback_models", "str", "",
                "Comma-separated models tried in order on retryable provider errors when no compaction model is "
                "set.", max_length=1000),
    _compaction("compaction_provider", "str", "",
                "Id of an installed compaction provider plugin (entry-point group "
                "pentagi_web.compaction_providers); on error or empty output the built-in summary is used.",
                max_length=100),
    _compaction("max_active_transcript_bytes", "int", 0,
                "Byte guard: compact before a turn once the active segment reaches this size; 0 = off. Needs "
                "successor segments.", unit="bytes", maximum=1024 * KB * KB),
    _compaction("truncate_after_compaction", "bool", False,
                "After a compaction, start a new active segment from the summary and kept tail; the old one is "
                "archived unchanged."),
    _compaction("memory_flush", "bool", True,
                "Save identifiers, credentials, hosts and decisions that leave the view as flow notes before "
                "compacting."),
    _compaction("notify_user", "bool", True, "Show 'compaction started / complete' notices in the live view."),
    _compaction("pruning_mode", "choice", "off",
                "Trim old tool results in the request sent to the model (never stored).", choices=PRUNING_MODES,
                max_length=8),
    _compaction("prune_keep_last_assistants", "int", 3,
                "Tool results of the last N assistant messages are never pruned.", unit="assistant messages",
                maximum=100),
    _compaction("prune_tools_allow", "str", "",
                "Comma-separated tool name globs that may be pruned; empty = all.", max_length=500),
    _compaction("prune_tools_deny", "str", "",
                "Comma-separated tool name globs never pruned; deny wins.", max_length=500),
    SettingSpec("gateway_mode", "choice",
                {AGENT: "GATEWAY_MODE", ASSISTANT: ASSISTANT_COMPACTION_PREFIX + "GATEWAY_MODE"},
                {AGENT: "manage", ASSISTANT: "manage"},
                "What /v1/chat/completions forwards: 'manage' the summarized view fitted to the window, 'observe' "
                "the agent's request untouched; a request may override it with the X-Gateway-Mode header.",
                "", None, None, "compaction", GATEWAY_MODES, 8),
    _gateway("loop_repeats", "int", 3,
             "Agent loops: flag a tool call (same name and arguments) that comes this many times in a row, or "
             "this many times within the last 'loop window' calls; 0 or 1 = off.", unit="calls", minimum=0,
             maximum=100),
    _gateway("loop_window", "int", 10,
             "Agent loops: how many of the agent's latest tool calls a repeat is counted in; 0 = only repeats in "
             "a row count.", unit="calls", minimum=0, maximum=200),
    _gateway("summary_fallback", "choice", "offline",
             "During a gateway call, when every summary/compaction model fails (error, timeout, empty or non-text "
             "answer, identifier audit failed twice) or the call's summarizer bound below is reached: 'offline' "
             "the offline extractive summarizer writes the summary and the call proceeds (the event names the "
             "failed model); 'fail' the run fails closed and the view stays as it was.", choices=SUMMARY_FALLBACKS),
    _gateway("summary_deadline_seconds", "int", 60,
             "Total time one gateway call may spend summarizing and fitting (its overflow retries included); past "
             "it no model call is waited for: the offline summarizer writes the rest ('offline') or the call goes "
             "upstream with the view as far as it got ('fail'). 0 = no deadline.", unit="seconds", minimum=0,
             maximum=3600),
    _gateway("summary_max_calls", "int", 32,
             "Most summarize calls one gateway call may make to a model; past it the offline summarizer writes "
             "the rest ('offline') or no further model call is made ('fail'). 0 = no cap.", unit="calls",
             minimum=0, maximum=10_000),
)

# When the summarizer runs: PentAGI's byte budgets after every turn (exact, the default) or only when the view
# would not fit the model's window (summarizer.strategy.window). Variables COMPACTION_STRATEGY, ... as above.
STRATEGY_SETTINGS: tuple[SettingSpec, ...] = tuple(
    SettingSpec(spec.name, spec.kind, spec.env, spec.default, spec.help, spec.unit, spec.minimum, spec.maximum,
                "strategy", spec.choices, spec.max_length) for spec in (
        _compaction("strategy", "choice", PENTAGI,
                    "pentagi: PentAGI's passes after every turn by the byte budgets above (exact). window: the "
                    "passes run only when the view would not fit the model's window minus the reserve (or the "
                    "trigger share below), then summarize the oldest content until the view is back at the "
                    "target; unknown window: pentagi.", choices=STRATEGIES, max_length=16),
        _compaction("window_trigger_percent", "int", 100,
                    "window strategy: also summarize once the view exceeds this share of the window (100: only "
                    "when it would not fit the window minus the reserve).", unit="% of the window", minimum=1,
                    maximum=100),
        _compaction("window_margin_percent", "int", 50,
                    "window strategy: a pass frees this share of the room the trigger leaves beside what no pass "
                    "folds (the system prompt, the user's requests, the newest pair), so the next turns fit "
                    "without summarizing (larger: fewer, larger folds).", unit="% of the room",
                    minimum=0, maximum=90),
        _compaction("window_input_tokens", "int", DEFAULT_INPUT_TOKENS,
                    "window strategy: at most this much (and 1/64 of the trigger) is sent per summarize call, "
                    "besides short instructions and the system prompt: what is folded, as it is when it fits, "
                    "else its extractive digest (actions, findings, identifiers); what the model's summary does "
                    "not quote goes into its ledger, and earlier summaries are merged locally, never sent "
                    "again. Larger: the model rewrites more of each fold, at more input. 0: the whole span, "
                    "earlier summaries included, as PentAGI sends it.", unit="tokens", minimum=0, maximum=1_000_000),
        _compaction("window_local_folds", "bool", True,
                    "window strategy, with an input bound: a span of tool calls and their output only (no words "
                    "of the agent's), or one within the summary's budget, is folded by the offline extractive "
                    "summarizer without a model call. Off: every fold calls the model."),
    ))

SETTINGS_FIELDS: tuple[SettingSpec, ...] = (*SUMMARIZER_SETTINGS, *COMPACTION_SETTINGS, *STRATEGY_SETTINGS)
FIELDS_BY_NAME = {spec.name: spec for spec in SETTINGS_FIELDS}
# The assistant always collapses QA sections and never summarizes the user's own messages (not editable).
ASSISTANT_FORCED = {spec.name: spec.forced[ASSISTANT] for spec in SETTINGS_FIELDS if ASSISTANT in spec.forced}


def env_fallback(spec: SettingSpec, profile: str) -> str | None:
    """The variable read when the profile's own is unset: the shared COMPACTION_* for the assistant."""
    if profile == ASSISTANT and spec.group in ("compaction", "strategy"):
        return spec.env[AGENT]
    return None


def model_help(spec: SettingSpec) -> str:
    """The model field's help text: the description and the variables that set it."""
    names = [name for name in (spec.env[AGENT], spec.env[ASSISTANT]) if name]
    return f"{spec.help} ({', '.join(names)})"
