"""What the model received beside the raw chain, row by row, with what happened to each raw message.

The call page used to print the whole raw chain, then the sent messages below it ("sent to the model" started
~17,000 px down on a demo call). Here both lists are walked once, in order: a sent message that is a raw
message (a tool result by its call id, anything else by role and text) sits beside it; raw messages with no
sent counterpart fold into one group beside the summary that replaced them (the summary stands where they
began); an assistant turn with tool calls is matched by its call ids.
Each row says *kept*, *truncated* (a tool result cut head + tail), *pruned* (a tool result replaced by
a short placeholder), *summary* / *summarized*, or *added* (a sent message with no raw original).
"""
from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Side", "AlignedRow", "align", "message_text", "PRUNED_MAX_CHARS"]

PRUNED_MAX_CHARS = 300  # a sent tool result this short in place of a longer raw one was pruned, not truncated
_SUMMARY_MARKS = ("<summary>", "**summarized content:**", "execute_task_and_return_summary")


def message_text(message: dict[str, Any]) -> str:
    """Text, content parts and tool calls of a message, as one string (the page escapes it)."""
    content = message.get("content")
    parts = [content] if isinstance(content, str) else [
        str(p.get("text") or (p.get("image_url") or {}).get("url") or "") for p in content or []
        if isinstance(p, dict)]
    for call in message.get("tool_calls") or []:
        fn = call.get("function") or {} if isinstance(call, dict) else {}
        parts.append(f"→ {fn.get('name', '?')}({fn.get('arguments', '')})")
    return "\n".join(p for p in parts if p)


@dataclass(frozen=True)
class Side:
    role: str
    text: str
    seq: int | None = None  # raw side only
    tool_call_id: str = ""


@dataclass
class AlignedRow:
    status: str  # kept | truncated | pruned (a pair) · summarized (a raw group) · summary | added (sent only)
    raw: list[Side] = field(default_factory=list)  # one raw message, or the group a summary replaced
    sent: Side | None = None
    sent_kind: str = ""  # for a raw group: what stands beside it (summary | added), if anything


def _key(m: dict[str, Any], text: str) -> tuple[str, str]:
    if m.get("role") == "tool" and m.get("tool_call_id"):
        return ("tool", str(m["tool_call_id"]))
    ids = [str(c.get("id")) for c in m.get("tool_calls") or [] if isinstance(c, dict) and c.get("id")]
    if ids:  # the same call text recurs (the same scan twice): the call ids tell the turns apart
        return ("calls", ",".join(ids))
    return (str(m.get("role") or "?"), text)


def _pair_status(raw: Side, sent: Side) -> str:
    if raw.text == sent.text:
        return "kept"
    return "pruned" if len(sent.text) <= PRUNED_MAX_CHARS else "truncated"


def _unmatched_status(sent: Side) -> str:
    lowered = sent.text.lower()
    return "summary" if any(mark in lowered for mark in _SUMMARY_MARKS) else "added"


def align(raw: list[tuple[int, dict[str, Any]]], sent: list[dict[str, Any]]) -> list[AlignedRow]:
    """Rows in raw order; `raw` is (seq, message) pairs, `sent` what went upstream, both oldest first."""
    raw_sides = [Side(str(m.get("role") or "?"), message_text(m), seq, str(m.get("tool_call_id") or ""))
                 for seq, m in raw]
    positions: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, (side, (_, m)) in enumerate(zip(raw_sides, raw, strict=True)):
        positions[_key(m, side.text)].append(i)
    rows: list[AlignedRow] = []
    waiting: list[Side] = []  # sent messages with no raw original, placed beside the next group
    at = 0
    for m in sent:
        side = Side(str(m.get("role") or "?"), message_text(m), None, str(m.get("tool_call_id") or ""))
        found = positions.get(_key(m, side.text), [])
        k = bisect_left(found, at)
        if k == len(found):
            waiting.append(side)
            continue
        i = found[k]
        _emit_gap(rows, raw_sides[at:i], waiting)
        rows.append(AlignedRow(_pair_status(raw_sides[i], side), [raw_sides[i]], side))
        at = i + 1
    _emit_gap(rows, raw_sides[at:], waiting)
    return rows


def _emit_gap(rows: list[AlignedRow], group: list[Side], waiting: list[Side]) -> None:
    """Raw messages no sent message stands for, beside the first unmatched sent message before them."""
    if group:
        first = waiting.pop(0) if waiting else None
        rows.append(AlignedRow("summarized", group, first, _unmatched_status(first) if first else ""))
    for side in waiting:
        rows.append(AlignedRow(_unmatched_status(side), [], side))
    waiting.clear()
