"""Parsing ids out of query and form parameters (pages and API alike).

`str.isdigit()` is not a test for "int() will accept this": it is true for superscripts such as "²", which
`int()` refuses, so `?flow=²` was a 500. Ids here are plain ASCII digits, bounded like the API's URL ids.
"""
from __future__ import annotations

import re

__all__ = ["ID_MAX_DIGITS", "parse_id"]

ID_MAX_DIGITS = 18  # below 2**63, so the lookup never overflows the database's integer
_ID = re.compile(rf"[0-9]{{1,{ID_MAX_DIGITS}}}")


def parse_id(raw: str | None) -> int | None:
    """The id in `raw` when it is 1-18 ASCII digits, else None (the caller decides: ignore, 400 or 404)."""
    if raw is None or not _ID.fullmatch(raw):
        return None
    return int(raw)
