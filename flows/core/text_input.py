"""Text the database can hold, checked the same way on every write path (API, pages, services).

Two characters break storage in ways that depend on the database, so they are refused up front with a 400:
- a lone UTF-16 surrogate (`"\\ud800"` is valid JSON but not Unicode): encoding it to UTF-8 raises on
  SQLite and PostgreSQL alike, which was a 500 on every JSON write endpoint;
- U+0000 in a plain text column (names, ids, focus instructions, search filters): PostgreSQL refuses it,
  SQLite stores it, so the same request was a 500 on one and accepted on the other. Message bodies may hold
  NUL: the JSON columns store it escaped (models/fields.py).

A JSON body is read once, by `json_body`, on the API and the gateway alike: whatever `json.loads` raises on
hostile input (a syntax error, bytes that are not UTF-8, an integer over Python's 4,300-digit conversion limit,
nesting deep enough to exhaust the stack) and whatever would break later code (nesting past `MAX_JSON_DEPTH`, a
lone surrogate) is one `JsonBodyError` with a reason, which each endpoint answers in its own 400 format.
"""
from __future__ import annotations

import json
import re
from typing import Any

from flows.engine import MAX_INSTRUCTION_CHARS

__all__ = ["MAX_INSTRUCTIONS_CHARS", "MAX_JSON_DEPTH", "JsonBodyError", "json_body", "json_depth_over",
           "lone_surrogate_path", "plain_text_problem", "instructions_problem", "storable_json", "storable_text"]

REPLACEMENT = "\ufffd"

# One cap for the API, the chain page's form and the compaction prompt (compaction.md §5).
MAX_INSTRUCTIONS_CHARS = MAX_INSTRUCTION_CHARS
_SURROGATE = re.compile("[\ud800-\udfff]")  # json.loads joins valid pairs, so any left are lone
# Far deeper than any real message or tool schema; shallow enough that every recursive walk of a stored value
# (serializers, hashing, the engine's copies) stays far from the interpreter's recursion limit.
MAX_JSON_DEPTH = 100


class JsonBodyError(ValueError):
    """A body that is not usable JSON; `code` names the problem, the message says where and why."""

    def __init__(self, code: str, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.code, self.field = code, field


def json_body(raw: bytes | str) -> Any:
    """The parsed body, or JsonBodyError (codes `malformed_json`, `too_deep`, `invalid_text`)."""
    try:
        value = json.loads(raw)
    except RecursionError:  # the C decoder recurses per nesting level
        raise JsonBodyError("too_deep", f"the body is nested deeper than {MAX_JSON_DEPTH} levels") from None
    except UnicodeDecodeError as exc:
        raise JsonBodyError("malformed_json", f"the body is not UTF-8 text: {exc.reason}") from None
    except ValueError as exc:  # JSONDecodeError, and int() past sys.get_int_max_str_digits()
        raise JsonBodyError("malformed_json", f"the body is not valid JSON: {exc}") from None
    if json_depth_over(value, MAX_JSON_DEPTH):
        raise JsonBodyError("too_deep", f"the body is nested deeper than {MAX_JSON_DEPTH} levels")
    where = lone_surrogate_path(value) if _may_hold_surrogate(raw) else None
    if where is not None:  # "\ud800" is valid JSON but no UTF-8 text: every later encode would be a 500
        raise JsonBodyError("invalid_text", f"{where} holds a lone UTF-16 surrogate, which is not valid Unicode",
                            field=where)
    return value


def _may_hold_surrogate(raw: bytes | str) -> bool:
    """False when `json.loads(raw)` cannot hold a lone surrogate, so a clean body skips the walk of every string.

    json.loads makes a surrogate only from a `\\uD800`-`\\uDFFF` escape or from one in the text itself (bytes
    are decoded with `surrogatepass`: in UTF-8 a surrogate is ED A0-BF); a few C-level searches of the raw body
    rule both out. Any other encoding, or a hit (also Hangul's ED 80-9F, an escaped backslash before `ud`), is
    left to the walk, which finds the real ones and where they are."""
    if isinstance(raw, str):
        return "\\ud" in raw or "\\uD" in raw or _SURROGATE.search(raw) is not None
    if json.detect_encoding(raw) != "utf-8":
        return True
    return b"\\ud" in raw or b"\\uD" in raw or b"\xed" in raw


def json_depth_over(value: Any, limit: int) -> bool:
    """Whether containers nest more than `limit` deep in `value` (the root is level 1).

    Level by level, iterative (safe on any depth): each level's children are gathered with C-level list
    extends and only the containers among them are looked into; a container-per-frame walk costs several times
    more on a 2,000-message body (this runs on every gateway and API request)."""
    level, depth = [value], 1
    while level:
        if depth > limit:
            return any(isinstance(item, (dict, list)) for item in level)
        below: list[Any] = []
        for item in level:
            if isinstance(item, dict):
                below += item.values()
            elif isinstance(item, list):
                below += item
        level, depth = below, depth + 1
    return False


def _child_path(path: str, key: Any) -> str:
    return f"{path}[{key}]" if isinstance(key, int) else (f"{path}.{key}" if path else str(key))


def lone_surrogate_path(value: Any, root: str = "") -> str | None:
    """Where the first string (or key) holding a lone surrogate is, e.g. `messages[0].content`; None when clean.

    Iterative, so a deeply nested hostile body cannot exhaust the stack.
    """
    stack: list[tuple[str, Any]] = [(root, value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return path or "body"
        elif isinstance(item, dict):
            for key, child in item.items():
                if isinstance(key, str) and _SURROGATE.search(key):
                    return path or "body"
                stack.append((_child_path(path, key), child))
        elif isinstance(item, list):
            stack.extend((_child_path(path, i), child) for i, child in enumerate(item))
    return None


def storable_text(text: str) -> str:
    """`text` with what no database column can hold (NUL, lone surrogates) replaced by U+FFFD.

    For text we write but did not receive as input (summaries, reasons, memory notes, upstream errors): what an
    agent sends is refused with a 400 instead, what the pipeline derives from it must never fail to save.
    """
    if "\x00" not in text and not _SURROGATE.search(text):
        return text
    return _SURROGATE.sub(REPLACEMENT, text.replace("\x00", REPLACEMENT))


def storable_json(value: Any) -> Any:
    """`value` with storable_text applied to every string and key (jsonb refuses \\u0000 and lone surrogates)."""
    if isinstance(value, str):
        return storable_text(value)
    if isinstance(value, list):
        return [storable_json(v) for v in value]
    if isinstance(value, dict):
        return {storable_text(k) if isinstance(k, str) else k: storable_json(v) for k, v in value.items()}
    return value


def plain_text_problem(text: str) -> str | None:
    """Why `text` cannot go into a plain text column, or None."""
    if "\x00" in text:
        return "must not contain NUL (U+0000) characters"
    if _SURROGATE.search(text):
        return "must be valid Unicode text (it holds a lone UTF-16 surrogate)"
    return None


def instructions_problem(value: Any) -> str | None:
    """Why `value` is not usable as compaction focus instructions, or None (the API and the page share it)."""
    if not isinstance(value, str):
        return "must be a string"
    if len(value.strip()) > MAX_INSTRUCTIONS_CHARS:
        return f"is longer than {MAX_INSTRUCTIONS_CHARS} characters"
    return plain_text_problem(value)
