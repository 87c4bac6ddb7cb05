"""Side-by-side layout of the chain page: raw messages on the left, the model's view on the right.

The view is cut into *units*: a summary pair (assistant call + tool result sharing one lineage) is one unit,
every verbatim message is its own unit. Each unit is shown in one band next to the raw messages it stands for
(its lineage), so a summary sits beside the hundred raw messages it replaced and a verbatim message beside its
original. Bands are ordered by raw seq; a new view section (a user message) draws a divider. Raw messages newer
than the view land in a trailing "not in the view yet" band, which is where live appends go.

Only the current page's seq window is laid out, so the cost follows the page size, not the chain length.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..engine import message_size, message_tokens
from ..models import ChainView, Message
from ..selectors_pages import display_text, is_summary_message
from ..services.view_records import seq_ranges

__all__ = ["PREVIEW_CHARS", "FULL_TEXT_CHARS", "RawRow", "ViewRow", "Band", "raw_row", "view_rows", "layout_bands",
           "seq_ranges_text", "message_bytes", "tool_name_of"]

PREVIEW_CHARS = 240
FULL_TEXT_CHARS = 32 * 1024  # longer bodies link to the plain-text endpoint instead of bloating the page


@dataclass
class RawRow:
    seq: int
    role: str
    tool: str
    byte_size: int
    tokens: int | None
    preview: str
    full: str
    clipped: bool  # full text was cut at FULL_TEXT_CHARS

    @property
    def long(self) -> bool:
        return len(self.full) > len(self.preview)


@dataclass
class ViewRow:
    index: int
    role: str
    tool: str
    byte_size: int
    tokens: int
    preview: str
    full: str
    summary: bool
    raw_seqs: list[int]

    @property
    def long(self) -> bool:
        return len(self.full) > len(self.preview)

    @property
    def lineage(self) -> str:
        return seq_ranges_text(self.raw_seqs)


@dataclass
class Band:
    key: tuple[int, int]
    kind: str  # "unit", "orphan" (raw not in view), "pending" (newer than the view)
    section: int = 0
    section_title: str = ""
    raw: list[RawRow] = field(default_factory=list)
    view: list[ViewRow] = field(default_factory=list)
    continued: bool = False  # the unit also covers seqs before this page
    section_start: bool = False  # first band of its view section on this page: draw a divider

    @property
    def summary(self) -> bool:
        return any(v.summary for v in self.view)

    @property
    def lineage(self) -> str:
        return seq_ranges_text(sorted({s for v in self.view for s in v.raw_seqs}))


def seq_ranges_text(seqs: Iterable[int]) -> str:
    """[1,2,3,7,9,10] -> "1-3,7,9-10" (compact attribute for lineage highlighting)."""
    return ",".join(f"{first}-{last}" if last != first else str(first) for first, last in seq_ranges(seqs))


def _preview(text: str) -> str:
    return text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS].rstrip() + " …"


def tool_name_of(message: dict[str, Any], tool_names: dict[str, str]) -> str:
    if message.get("role") == "tool":
        return message.get("name") or tool_names.get(message.get("tool_call_id") or "", "")
    calls = message.get("tool_calls") or []
    return ", ".join(((c or {}).get("function") or {}).get("name", "?") for c in calls)


def message_bytes(message: dict[str, Any], tool_names: dict[str, str]) -> int:
    """PentAGI's size of a view message (the engine's own rule; bad shapes count as 0 rather than fail)."""
    try:
        return message_size(message, tool_names)
    except (KeyError, TypeError, AttributeError):
        return 0


def raw_row(message: Message, tool_names: dict[str, str]) -> RawRow:
    data = message.to_dict()
    text = display_text(data)
    full = text[:FULL_TEXT_CHARS]
    return RawRow(seq=message.seq, role=message.role, tool=tool_name_of(data, tool_names),
                  byte_size=message.byte_size, tokens=message.token_count, preview=_preview(text), full=full,
                  clipped=len(text) > FULL_TEXT_CHARS)


def view_rows(view: ChainView | None, tool_names: dict[str, str], *, model: str = "",
              wanted: set[int] | None = None) -> list[ViewRow]:
    """Rows for view messages; with `wanted`, only (indices of) those messages are rendered in full."""
    if view is None:
        return []
    names = dict(tool_names)
    for m in view.messages:  # summary calls exist only in the view, so learn their names here too
        for call in m.get("tool_calls") or []:
            if (call or {}).get("id"):
                names[call["id"]] = ((call.get("function") or {}).get("name") or "")
    rows: list[ViewRow] = []
    lineage = view.lineage or []
    for i, m in enumerate(view.messages):
        seqs = [int(s) for s in (lineage[i] if i < len(lineage) else [])]
        if wanted is not None and i not in wanted:
            rows.append(ViewRow(i, m.get("role", ""), "", 0, 0, "", "", False, seqs))
            continue
        text = display_text(m)
        size = message_bytes(m, names)
        rows.append(ViewRow(index=i, role=m.get("role", ""), tool=tool_name_of(m, names), byte_size=size,
                            tokens=message_tokens(m, model=model or None), preview=_preview(text),
                            full=text[:FULL_TEXT_CHARS], summary=is_summary_message(m, seqs), raw_seqs=seqs))
    return rows


def _units(view: ChainView | None) -> list[list[int]]:
    """Indices of view messages grouped into units: consecutive messages with one shared multi-seq lineage."""
    if view is None:
        return []
    lineage = view.lineage or []
    units: list[list[int]] = []
    for i in range(len(view.messages)):
        seqs = lineage[i] if i < len(lineage) else []
        prev = units[-1][-1] if units else None
        if prev is not None and len(seqs) > 1 and (lineage[prev] if prev < len(lineage) else None) == seqs:
            units[-1].append(i)
        else:
            units.append([i])
    return units


def layout_bands(*, view: ChainView | None, raw: list[RawRow], page_lo: int, page_hi: int, filtered: bool,
                 tool_names: dict[str, str], model: str = "") -> list[Band]:
    """Bands for one page: view units overlapping [page_lo, page_hi] beside the raw rows they stand for."""
    view_to = view.raw_seq_to if view is not None else 0
    lineage = (view.lineage or []) if view is not None else []
    units = _units(view)
    seq_unit: dict[int, int] = {}
    for u, idxs in enumerate(units):
        for s in (lineage[idxs[0]] if idxs[0] < len(lineage) else []):
            seq_unit.setdefault(int(s), u)
    raw_seqs_on_page = {r.seq for r in raw}
    shown: list[int] = []
    for u, idxs in enumerate(units):
        seqs = [int(s) for s in (lineage[idxs[0]] if idxs[0] < len(lineage) else [])]
        on_page = any(page_lo <= s <= page_hi for s in seqs)
        if (filtered and any(s in raw_seqs_on_page for s in seqs)) or (not filtered and (on_page or not seqs)):
            shown.append(u)
    wanted = {i for u in shown for i in units[u]}
    vrows = view_rows(view, tool_names, model=model, wanted=wanted)
    sections = _section_numbers(view)
    bands: dict[Any, Band] = {}
    last_key = (0, 0)
    for u in shown:
        idxs = units[u]
        seqs = vrows[idxs[0]].raw_seqs
        key = (min(seqs), 0) if seqs else (last_key[0], last_key[1] + 1)
        last_key = key
        section, title = sections[idxs[0]]
        bands[("u", u)] = Band(key=key, kind="unit", section=section, section_title=title,
                               view=[vrows[i] for i in idxs], continued=bool(seqs) and min(seqs) < page_lo)
    for row in raw:
        if row.seq > view_to:
            band = bands.setdefault("pending", Band(key=(10**12, 0), kind="pending"))
        elif row.seq in seq_unit and ("u", seq_unit[row.seq]) in bands:
            band = bands[("u", seq_unit[row.seq])]
        else:
            band = bands.setdefault(("o", row.seq), Band(key=(row.seq, 1), kind="orphan"))
        band.raw.append(row)
    ordered = sorted(bands.values(), key=lambda b: b.key)
    return _mark_section_starts(ordered)


def _section_numbers(view: ChainView | None) -> list[tuple[int, str]]:
    """Per view message: (section number, title). A user message opens a section, as in PentAGI's AST."""
    out: list[tuple[int, str]] = []
    number, title = 0, ""
    for m in (view.messages if view is not None else []):
        if m.get("role") == "user":
            number += 1
            title = _preview(display_text(m))[:120]
        out.append((number, title))
    return out


def _mark_section_starts(bands: list[Band]) -> list[Band]:
    """Keep a section title only on the first band of each section, so the template draws one divider."""
    current = None
    for band in bands:
        if band.kind != "unit":
            continue
        if band.section != current:
            current = band.section
            band.section_start = True
            band.section_title = band.section_title or ("system prompt" if band.section == 0 else "(empty)")
    return bands
