"""Head + tail truncation of oversized tool results (compaction.md §3.2 c, acceptance facts 8, 9, 12).

A tool result that alone takes a large part of the window is almost always a log or a listing whose
beginning (what ran) and end (how it ended, the error) matter most. We keep both ends, cut at line
boundaries so no line is half-shown, and say exactly how much was left out.

The 30% share is of the window, so it is measured in tokens: dense output (hashes, base64, IP lists) runs at
2-3 chars per token, and a chars/4 budget would keep half the window. The char budget starts from that
estimate and shrinks in proportion to the measured tokens until the result fits (or reaches the 2,000-char
floor, which wins in tiny windows).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["truncate_text", "truncate_to_tokens", "max_tool_result_chars", "max_tool_result_tokens",
           "truncate_tool_results", "tool_result_text", "TOOL_RESULT_MAX_WINDOW_SHARE", "MIN_KEEP_CHARS",
           "CHARS_PER_TOKEN", "OMITTED_MARKER"]

TOOL_RESULT_MAX_WINDOW_SHARE = 0.3  # one result keeps at most 30% of the window
MIN_KEEP_CHARS = 2000
CHARS_PER_TOKEN = 4  # first guess of a token share in chars (prose); the result is then counted
HEAD_SHARE = 0.6  # the head usually says what ran, the tail how it ended; both are kept
LINE_SNAP_SHARE = 0.5  # snap to a line boundary only if that keeps at least half of the part
OMITTED_MARKER = "[... {n} chars omitted ...]"
TOKEN_FIT_MARGIN = 0.97  # shrink a little more than proportionally, so the next round fits
MAX_TOKEN_FIT_ROUNDS = 8  # proportional shrinking converges in 2-3 rounds; this only bounds a pathology


def max_tool_result_chars(window_tokens: int) -> int:
    """First estimate of the characters one tool result may keep in a window of `window_tokens` (prose at
    CHARS_PER_TOKEN; never below MIN_KEEP_CHARS). The token check in truncate_to_tokens has the last word."""
    return _chars_for_tokens(max_tool_result_tokens(window_tokens))


def _chars_for_tokens(tokens: int) -> int:
    return max(MIN_KEEP_CHARS, tokens * CHARS_PER_TOKEN)


def max_tool_result_tokens(window_tokens: int) -> int:
    """Tokens one tool result may keep in a window of `window_tokens` (30% of it)."""
    return int(window_tokens * TOOL_RESULT_MAX_WINDOW_SHARE)


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


def _tail_outward(text: str, size: int, floor: int) -> str:
    """The last `size` chars widened to the start of their first line (not past `floor`), else cut mid-line."""
    start = len(text) - size
    line_start = text.rfind("\n", floor, start) + 1
    return text[line_start:] if line_start and start - line_start <= size * LINE_SNAP_SHARE else text[start:]


def truncate_text(text: str, max_chars: int) -> str:
    """`text` unchanged if it fits `max_chars`, else its head and tail around an omitted-chars marker.

    At least MIN_KEEP_CHARS are kept: when snapping to line boundaries would keep fewer, the tail is widened
    to a line start instead."""
    if len(text) <= max_chars:
        return text
    keep = max(max_chars, MIN_KEEP_CHARS)
    head = _head(text, int(keep * HEAD_SHARE))
    tail = _tail(text, keep - len(head))
    if len(head) + len(tail) < MIN_KEEP_CHARS:
        tail = _tail_outward(text, MIN_KEEP_CHARS - len(head), len(head))
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


def truncate_to_tokens(text: str, max_tokens: int, count: Callable[[str], int], *, tokens: int | None = None) -> str:
    """`text` cut head + tail so that `count` of the result is at most `max_tokens` (never below
    MIN_KEEP_CHARS). `tokens` is `count(text)` when the caller already knows it."""
    tokens = count(text) if tokens is None else tokens
    if tokens <= max_tokens:
        return text
    chars = min(len(text) - 1, _chars_for_tokens(max_tokens), int(len(text) * max_tokens / tokens))
    out = truncate_text(text, chars)
    for _round in range(MAX_TOKEN_FIT_ROUNDS):
        measured = count(out)
        if measured <= max_tokens or chars <= MIN_KEEP_CHARS:
            break
        chars = max(MIN_KEEP_CHARS, int(chars * max_tokens / measured * TOKEN_FIT_MARGIN))
        out = truncate_text(text, chars)
    return out


def truncate_tool_results(messages: Sequence[dict[str, Any]], *, window_tokens: int, start: int = 0,
                          model: str | None = None) -> tuple[list[dict[str, Any]], list[int]]:
    """Truncate every tool result from `start` on that takes more than 30% of the window (in `model`'s tokens).

    Returns the new messages (others untouched, same objects) and the indices that were truncated.
    """
    from summarizer.tokens.count import message_tokens, text_tokens  # lazy: tiktoken loads on first count
    limit = max_tool_result_tokens(window_tokens)
    out = list(messages)
    changed: list[int] = []
    for index in range(max(start, 0), len(out)):
        message = out[index]
        if message.get("role") != "tool" or message_tokens(message, model=model) <= limit:
            continue
        text = tool_result_text(message.get("content"))
        cut = truncate_to_tokens(text, limit, lambda t: text_tokens(t, model=model))
        if cut != text:
            out[index] = {**message, "content": cut}
            changed.append(index)
    return out, changed
