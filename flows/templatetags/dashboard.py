"""Number formatting for the pages (sizes in bytes and tokens, compact and readable)."""
from __future__ import annotations

from django import template

from flows.live import MAX_SOCKETS_PER_USER

register = template.Library()

KIB = 1024


@register.filter
def num(value) -> str:
    """12345 -> "12,345" (no locale machinery; agents' numbers only)."""
    try:
        return f"{int(value):,}"
    except (TypeError, ValueError):
        return "–"


@register.filter
def kb(value) -> str:
    """Bytes as B / KB / MB with one decimal (1024-based, as the summarizer limits are)."""
    try:
        n = int(value)
    except (TypeError, ValueError):
        return "–"
    if abs(n) < KIB:
        return f"{n} B"
    if abs(n) < KIB * KIB:
        return f"{n / KIB:.1f} KB"
    return f"{n / KIB / KIB:.1f} MB"


@register.filter
def ktok(value) -> str:
    """Tokens as 950 / 12.3k / 1.2M."""
    try:
        n = int(value)
    except (TypeError, ValueError):
        return "–"
    if abs(n) < 1000:
        return str(n)
    if abs(n) < 1_000_000:
        return f"{n / 1000:.1f}k"
    return f"{n / 1_000_000:.2f}M"


@register.simple_tag
def ws_cap() -> int:
    """The per-user live socket cap, so a page refused past it can say how many tabs are allowed."""
    return MAX_SOCKETS_PER_USER
