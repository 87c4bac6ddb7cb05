"""Side-by-side layout of the chain page: raw messages on the left, the model's view on the right.

The view is cut into *units*: a summary pair (assistant call + tool result sharing one lineage) is one unit,
every verbatim message is its own unit. The raw column is always in seq order (what the agent wrote, as it
wrote it); each unit opens a band at the first raw message it covers, so a summary sits at the top of the run
of raw messages it replaced and a verbatim message beside its original. A new view section (a user message)
draws a divider. Raw messages newer than the view land in a trailing "not in the view yet" band, which is
where live appends go.

Only the current page's seq window is laid out, so the cost follows the page size, not the chain length.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from flows.engine import message_size, message_tokens
from flows.models import ChainView, Message
from flows.pages.selectors import PAGE_SIZE_MESSAGES, display_text, is_summary_message
from flows.pipeline import seq_ranges

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
    thinking: str = ""  # the model's reasoning (Anthropic's thinking blocks), shown folded above the body

    @property
    def long(self) -> bool:
        return len(self.full) > len(self.preview)

    @property
    def page(self) -> int:
        """The unfiltered page holding this seq (pages are fixed seq windows), for permalinks."""
        return (self.seq - 1) // PAGE_SIZE_MESSAGES + 1


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
                  clipped=len(text) > FULL_TEXT_CHARS, thinking=reasoning_text(data)[:FULL_TEXT_CHARS])


def reasoning_text(message: dict[str, Any]) -> str:
    """The text of a message's reasoning ({content, signature}; redacted thinking has no content)."""
    reasoning = message.get("reasoning")
    content = reasoning.get("content") if isinstance(reasoning, dict) else None
    return content if isinstance(content, str) else ""


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


def _unit_seqs(view: ChainView | None, units: list[list[int]]) -> list[list[int]]:
    lineage = (view.lineage or []) if view is not None else []
    return [[int(x) for x in (lineage[idxs[0]] if idxs[0] < len(lineage) else [])] for idxs in units]


def _anchors(unit_seqs: list[list[int]], raw_seqs: list[int], page_lo: int, page_hi: int,
             filtered: bool) -> dict[int, int]:
    """unit -> the raw seq on this page it sits beside: the first one it covers (its own first, if shown)."""
    on_page = set(raw_seqs)
    anchors: dict[int, int] = {}
    previous = raw_seqs[0] if raw_seqs else None
    for u, seqs in enumerate(unit_seqs):
        covered = [x for x in seqs if x in on_page] if filtered else [x for x in seqs if page_lo <= x <= page_hi]
        if covered:
            anchors[u] = previous = min(covered)
        elif not seqs and not filtered and previous is not None:
            anchors[u] = previous  # a view-only message stays beside its predecessor's raw message
    return anchors


def layout_bands(*, view: ChainView | None, raw: list[RawRow], page_lo: int, page_hi: int, filtered: bool,
                 tool_names: dict[str, str], model: str = "") -> list[Band]:
    """Bands for one page, raw rows in seq order: a band opens at each raw row some view unit starts beside.

    The raw column therefore reads exactly as the agent wrote it, whatever order the view's sections put their
    messages in (QA collapse moves later user messages into the first section), and each view unit sits next
    to the first raw message it covers on this page; its other raws are found through lineage highlighting.
    """
    view_to = view.raw_seq_to if view is not None else 0
    units = _units(view)
    unit_seqs = _unit_seqs(view, units)
    anchors = _anchors(unit_seqs, [r.seq for r in raw if r.seq <= view_to], page_lo, page_hi, filtered)
    wanted = {i for u in anchors for i in units[u]}
    vrows = view_rows(view, tool_names, model=model, wanted=wanted)
    sections = _section_numbers(view)
    by_anchor: dict[int, list[int]] = {}
    for u, seq in anchors.items():
        by_anchor.setdefault(seq, []).append(u)
    bands: list[Band] = []
    for row in raw:
        if row.seq > view_to:
            if not bands or bands[-1].kind != "pending":
                bands.append(Band(key=(row.seq, 0), kind="pending"))
        elif row.seq in by_anchor or not bands or bands[-1].kind == "pending":
            here = by_anchor.get(row.seq, [])
            section, title = sections[units[here[0]][0]] if here else (bands[-1].section if bands else 0, "")
            bands.append(Band(key=(row.seq, 0), kind="unit" if here else "orphan", section=section,
                              section_title=title, view=[vrows[i] for u in here for i in units[u]],
                              continued=any(min(unit_seqs[u], default=row.seq) < row.seq for u in here)))
        bands[-1].raw.append(row)
    return _mark_section_starts(bands)


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
