"""Text the database can hold, checked the same way on every write path (API, pages, services).

Two characters break storage in ways that depend on the database, so they are refused up front with a 400:
- a lone UTF-16 surrogate (`"\\ud800"` is valid JSON but not Unicode): encoding it to UTF-8 raises on
  SQLite and PostgreSQL alike, which was a 500 on every JSON write endpoint;
- U+0000 in a plain text column (names, ids, focus instructions, search filters): PostgreSQL refuses it,
  SQLite stores it, so the same request was a 500 on one and accepted on the other. Message bodies may hold
  NUL: the JSON columns store it escaped (models/fields.py).
"""
from __future__ import annotations

import re
from typing import Any

from flows.engine import MAX_INSTRUCTION_CHARS

__all__ = ["MAX_INSTRUCTIONS_CHARS", "lone_surrogate_path", "plain_text_problem", "instructions_problem"]

# One cap for the API, the chain page's form and the compaction prompt (compaction.md §5).
MAX_INSTRUCTIONS_CHARS = MAX_INSTRUCTION_CHARS
_SURROGATE = re.compile("[\ud800-\udfff]")  # json.loads joins valid pairs, so any left are lone


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
