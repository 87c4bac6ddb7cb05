"""Tool-call argument repair (PentAGI): models sometimes emit raw control characters inside JSON strings.

Providers reject a chain whose stored arguments are not JSON, so before a chain is sent to another
provider every call's arguments are made valid: escape control characters inside strings, else `{}`.
"""
from __future__ import annotations

import json

__all__ = ["is_valid_json", "escape_control_chars", "sanitize_arguments"]

_SHORT_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def is_valid_json(text: str) -> bool:
    """Like Go's json.Valid: NaN/Infinity are not JSON."""
    try:
        json.loads(text, parse_constant=_reject_constant)
    except (ValueError, TypeError):
        return False
    return True


def escape_control_chars(text: str) -> str:
    """Escape raw 0x00-0x1F characters that sit inside JSON strings; everything else is left as is."""
    if is_valid_json(text):
        return text
    out: list[str] = []
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            elif ord(ch) < 0x20:
                out.append(_SHORT_ESCAPES.get(ch, f"\\u{ord(ch):04x}"))
                continue
        elif ch == '"':
            in_string = True
        out.append(ch)
    return "".join(out)


def sanitize_arguments(arguments: str) -> str:
    """Valid JSON stays; else escaped if that makes it valid; else `{}`."""
    if is_valid_json(arguments):
        return arguments
    escaped = escape_control_chars(arguments)
    return escaped if is_valid_json(escaped) else "{}"
