"""Step c, head + tail truncation of oversized tool results (compaction.md §3.2 c).

The rule: each result keeps at most 30% of the window (in tokens, the window's unit), at least 2,000 chars,
a clear "[... N chars omitted ...]" marker, cut at line boundaries.
"""
from __future__ import annotations

import hashlib
import re

from summarizer.compact.truncate import MIN_KEEP_CHARS, truncate_text, truncate_tool_results
from summarizer.tokens.count import text_tokens

WINDOW_TOKENS = 16_000
_MARKER_RE = re.compile(r"\[\.\.\. (\d+) chars omitted \.\.\.\]")


def _hex_dump(lines: int) -> str:
    """Dense text (hashes): about 2 chars per token, so a chars/4 budget would keep twice too many tokens."""
    return "\n".join(" ".join(hashlib.sha256(f"{i}-{j}".encode()).hexdigest()[:8] for j in range(8))
                     for i in range(lines))


def _log(lines: int) -> str:
    return "\n".join(f"line {i:05d}: scanning port {i} on 10.0.0.5 ... closed" for i in range(lines))


def _tool_view(text: str) -> list[dict]:
    return [{"role": "user", "content": "dump"},
            {"role": "assistant", "content": None,
             "tool_calls": [{"id": "c", "type": "function", "function": {"name": "t", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c", "content": text}]


def test_a_dense_result_keeps_at_most_30_percent_of_the_window_in_tokens():
    """§3.2 c: "at most 30% of the window each" - the window is in tokens, so dense output (hashes, base64)
    must be cut by its token count, not by an average chars-per-token figure."""
    text = _hex_dump(3_000)
    assert text_tokens(text) > WINDOW_TOKENS  # oversized
    out, changed = truncate_tool_results(_tool_view(text), window_tokens=WINDOW_TOKENS)
    assert changed == [2]
    assert text_tokens(out[2]["content"]) <= 0.3 * WINDOW_TOKENS


def test_a_result_under_30_percent_of_the_window_is_left_alone():
    text = _log(100)
    assert text_tokens(text) < 0.3 * WINDOW_TOKENS
    out, changed = truncate_tool_results(_tool_view(text), window_tokens=WINDOW_TOKENS)
    assert changed == [] and out[2]["content"] == text


def test_truncation_keeps_head_and_tail_at_line_boundaries_with_the_omitted_count():
    """§3.2 c: head + tail, a "[... N chars omitted ...]" marker with the true N, whole lines only."""
    text = _log(5_000)
    out = truncate_text(text, 6_000)
    head, marker, tail = re.split(r"\n?(\[\.\.\. \d+ chars omitted \.\.\.\])\n?", out)
    assert text.startswith(head) and text.endswith(tail)
    # The line break that ends the head stays with the head; every other char between head and tail is counted.
    assert int(_MARKER_RE.fullmatch(marker).group(1)) == len(text) - len(head) - len(tail) - 1
    lines = set(text.splitlines())
    assert all(line in lines for line in head.splitlines() + tail.splitlines())


def test_truncation_keeps_at_least_2000_chars_even_in_a_tiny_window():
    """§3.2 c: at least 2,000 chars are kept, however small the window."""
    text = _log(2_000)
    out, changed = truncate_tool_results(_tool_view(text), window_tokens=1_000)
    kept = _MARKER_RE.sub("", out[2]["content"])
    assert changed == [2] and len(kept.strip()) >= MIN_KEEP_CHARS


def test_a_list_content_result_is_truncated_to_text():
    text = _log(5_000)
    view = _tool_view(text)
    view[2]["content"] = [{"type": "text", "text": text}]
    out, changed = truncate_tool_results(view, window_tokens=WINDOW_TOKENS)
    assert changed == [2] and _MARKER_RE.search(out[2]["content"])
    assert text_tokens(out[2]["content"]) <= 0.3 * WINDOW_TOKENS
