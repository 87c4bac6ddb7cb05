"""Pruning: trimming old tool results in the request only, never stored (compaction.md §9, facts 53-60).

Lighter than compaction: no model call, nothing summarized, history untouched; only the copy of the view sent
with one request loses the bulk of old tool output. OpenClaw's defaults: off; the tool results of the last 3
assistant messages and everything before the first user message (bootstrap context) are never touched;
above 30% of the window (estimated at 4 chars per token) results over 4,000 chars keep their first and last
1,500 chars; above 50%, when at least 50,000 chars are prunable, the oldest results are cleared until the view
is under 50%. Tool allow/deny lists take `*` globs, case-insensitive, and deny wins.
OpenClaw's cache-ttl mode (prune only after the provider's prompt cache expired) is not implemented: we have
no prompt-cache clock, so mode is simply "off" or "on".
"""
from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

__all__ = ["PruneSettings", "PruneResult", "effective_prune_settings", "prune_view", "prune_view_report",
           "CLEARED_PLACEHOLDER", "IMAGE_PLACEHOLDER", "TRIM_NOTE", "CHARS_PER_TOKEN"]

CHARS_PER_TOKEN = 4
CLEARED_PLACEHOLDER = "[Old tool result content cleared]"
IMAGE_PLACEHOLDER = "[image omitted]"
TRIM_NOTE = "[Tool result trimmed: kept first {head} chars and last {tail} chars of {total} chars.]"
Message = dict[str, Any]


def _globs(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = value.split(",")
    return tuple(v.strip().lower() for v in value or () if isinstance(v, str) and v.strip())


@dataclass(frozen=True)
class PruneSettings:
    mode: str = "off"
    keep_last_assistants: int = 3
    soft_trim_ratio: float = 0.3
    hard_clear_ratio: float = 0.5
    min_prunable_tool_chars: int = 50_000
    soft_trim_max_chars: int = 4_000
    soft_trim_head_chars: int = 1_500
    soft_trim_tail_chars: int = 1_500
    hard_clear_enabled: bool = True
    tools_allow: tuple[str, ...] = field(default=())
    tools_deny: tuple[str, ...] = field(default=())

    @classmethod
    def from_any(cls, source: Any) -> PruneSettings:
        """From a PruneSettings, a mapping, or a settings row (pruning_mode, prune_keep_last_assistants,
        prune_tools_allow, prune_tools_deny)."""
        if isinstance(source, PruneSettings):
            return source
        get = source.get if isinstance(source, Mapping) else (lambda k, d=None: getattr(source, k, d))
        values: dict[str, Any] = {}
        for f in fields(cls):
            for key in (f.name, f"prune_{f.name}", "pruning_mode" if f.name == "mode" else ""):
                if key and get(key, None) is not None:
                    values[f.name] = get(key, None)
                    break
        values["tools_allow"] = _globs(values.get("tools_allow"))
        values["tools_deny"] = _globs(values.get("tools_deny"))
        return cls(**values)


def effective_prune_settings(source: Any) -> PruneSettings | None:
    """The settings to prune with, or None when pruning is off (the default, fact 53)."""
    if source is None:
        return None
    settings = PruneSettings.from_any(source)
    return None if str(settings.mode).lower() in ("", "off") else settings


@dataclass
class PruneResult:
    messages: list[Message]
    trimmed: list[int] = field(default_factory=list)
    cleared: list[int] = field(default_factory=list)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and part.get("type") == "text":
                parts.append(str(part.get("text", "")))
            elif isinstance(part, dict) and part.get("type") in ("image_url", "image"):
                parts.append(IMAGE_PLACEHOLDER)
        return "\n".join(parts)
    return "" if content is None else str(content)


def _chars(message: Message) -> int:
    args = sum(len(str((c.get("function") or {}).get("arguments", ""))) for c in message.get("tool_calls") or [])
    return len(_text(message.get("content"))) + args


def _tool_allowed(name: str, settings: PruneSettings) -> bool:
    low = name.lower()
    if any(fnmatch.fnmatchcase(low, g) for g in settings.tools_deny):
        return False
    return not settings.tools_allow or any(fnmatch.fnmatchcase(low, g) for g in settings.tools_allow)


def _prunable(messages: Sequence[Message], settings: PruneSettings) -> list[int]:
    """Indices of tool results that may be pruned, oldest first."""
    first_user = next((i for i, m in enumerate(messages) if m.get("role") == "user"), len(messages))
    assistants = [i for i, m in enumerate(messages) if m.get("role") == "assistant"]
    keep = max(int(settings.keep_last_assistants), 0)
    protected_from = assistants[-keep] if keep and len(assistants) >= keep else (len(messages) if not keep else 0)
    names = {str(c.get("id", "")): str((c.get("function") or {}).get("name", ""))
             for m in messages for c in m.get("tool_calls") or [] if isinstance(c, dict)}
    return [i for i, m in enumerate(messages)
            if m.get("role") == "tool" and first_user < i < protected_from
            and _tool_allowed(names.get(str(m.get("tool_call_id", "")), ""), settings)]


def _soft_trim(text: str, settings: PruneSettings) -> str:
    head, tail = settings.soft_trim_head_chars, settings.soft_trim_tail_chars
    note = TRIM_NOTE.format(head=head, tail=tail, total=len(text))
    return f"{text[:head]}\n...\n{text[-tail:] if tail else ''}\n\n{note}"


def prune_view_report(messages: Sequence[Message], *, window_tokens: int, settings: Any) -> PruneResult:
    """Prune `messages` for one request; returns the new list (input untouched) and what was changed."""
    out = list(messages)
    effective = effective_prune_settings(settings)
    if effective is None or window_tokens <= 0 or not out:
        return PruneResult(messages=out)
    window_chars = window_tokens * CHARS_PER_TOKEN
    total = sum(_chars(m) for m in out)
    result = PruneResult(messages=out)
    candidates = _prunable(out, effective)
    if total / window_chars > effective.soft_trim_ratio:
        for i in candidates:
            text = _text(out[i].get("content"))
            if len(text) > effective.soft_trim_max_chars:
                trimmed = _soft_trim(text, effective)
                total += len(trimmed) - len(text)
                out[i] = {**out[i], "content": trimmed}
                result.trimmed.append(i)
    prunable_chars = sum(len(_text(out[i].get("content"))) for i in candidates)
    if (effective.hard_clear_enabled and total / window_chars > effective.hard_clear_ratio
            and prunable_chars >= effective.min_prunable_tool_chars):
        for i in candidates:
            if total / window_chars <= effective.hard_clear_ratio:
                break
            total += len(CLEARED_PLACEHOLDER) - len(_text(out[i].get("content")))
            out[i] = {**out[i], "content": CLEARED_PLACEHOLDER}
            result.cleared.append(i)
    return result


def prune_view(messages: Sequence[Message], *, window_tokens: int, settings: Any) -> list[Message]:
    """The pruned copy of `messages` for one request (compaction.md §9); unchanged when pruning is off."""
    return prune_view_report(messages, window_tokens=window_tokens, settings=settings).messages
