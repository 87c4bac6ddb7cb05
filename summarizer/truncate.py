"""Head + tail truncation of oversized tool results (compaction.md §3.2 c, acceptance facts 8, 9, 12).

A tool result that alone takes a large part of the window is almost always a log or a listing whose
beginning (what ran) and end (how it ended, the error) matter most. We keep both ends, cut at line
boundaries so no line is half-shown, and say exactly how much was left out.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["truncate_text", "max_tool_result_chars", "truncate_tool_results", "tool_result_text",
           "TOOL_RESULT_MAX_WINDOW_SHARE", "MIN_KEEP_CHARS", "CHARS_PER_TOKEN", "OMITTED_MARKER"]

TOOL_RESULT_MAX_WINDOW_SHARE = 0.3  # one result keeps at most 30% of the window
MIN_KEEP_CHARS = 2000
CHARS_PER_TOKEN = 4  # only to turn a token share into a character budget; the result is re-counted after
HEAD_SHARE = 0.6  # the head usually says what ran, the tail how it ended; both are kept
LINE_SNAP_SHARE = 0.5  # snap to a line boundary only if that keeps at least half of the part
OMITTED_MARKER = "[... {n} chars omitted ...]"


def max_tool_result_chars(window_tokens: int) -> int:
    """Characters one tool result may keep in a window of `window_tokens` (never below MIN_KEEP_CHARS)."""
    return max(MIN_KEEP_CHARS, int(window_tokens * TOOL_RESULT_MAX_WINDOW_SHARE * CHARS_PER_TOKEN))


def _head(text: str, size: int) -> str:
    head = text[:size]
    newline = head.rfind("\n")
    return head[:newline + 1] if newline >= size * LINE_SNAP_SHARE else head


def _tail(text: str, size: int) -> str:
    if size <= 0:
        return ""
    tail = text[-size:]
    newline = tail.find("\n")
    return tail[newline + 1:] if 0 <= newline <= size * (1 - LINE_SNAP_SHARE) else tail


def truncate_text(text: str, max_chars: int) -> str:
    """`text` unchanged if it fits `max_chars`, else its head and tail around an omitted-chars marker."""
    if len(text) <= max_chars:
        return text
    keep = max(max_chars, MIN_KEEP_CHARS)
    head = _head(text, int(keep * HEAD_SHARE))
    tail = _tail(text, keep - len(head))
    omitted = len(text) - len(head) - len(tail)
    if omitted <= 0:
        return text
    separator_before = "" if head.endswith("\n") or not head else "\n"
    separator_after = "" if tail.startswith("\n") or not tail else "\n"
    return f"{head}{separator_before}{OMITTED_MARKER.format(n=omitted)}{separator_after}{tail}"


def tool_result_text(content: Any) -> str:
    """The text of a tool message's content (a string, or the text parts of a list joined by newlines)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content
                         if isinstance(part, dict) and part.get("type") == "text")
    return "" if content is None else str(content)


def truncate_tool_results(messages: Sequence[dict[str, Any]], *, window_tokens: int,
                          start: int = 0) -> tuple[list[dict[str, Any]], list[int]]:
    """Truncate every tool result from `start` on that is longer than the per-result budget.

    Returns the new messages (others untouched, same objects) and the indices that were truncated.
    """
    limit = max_tool_result_chars(window_tokens)
    out = list(messages)
    changed: list[int] = []
    for index in range(max(start, 0), len(out)):
        message = out[index]
        if message.get("role") != "tool":
            continue
        text = tool_result_text(message.get("content"))
        if len(text) <= limit:
            continue
        out[index] = {**message, "content": truncate_text(text, limit)}
        changed.append(index)
    return out, changed
