"""The settings preview's diff: which messages of the previewed view are new, gone or changed vs the current view.

Messages are compared by role and text (difflib over the two sequences, like a line diff): an equal run is
unchanged; a replaced run pairs messages one to one as "changed" (same place, other text) and the surplus of
either side is "added" (only in the preview) or "removed" (only in the current view).
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = ["DiffCounts", "DiffRow", "diff_views"]


class _Row(Protocol):
    role: str
    full: str
    byte_size: int


@dataclass(frozen=True)
class DiffRow:
    status: str  # "same" | "added" | "removed" | "changed"
    current: Any  # the current view's row (None when added)
    new: Any  # the previewed view's row (None when removed)


@dataclass
class DiffCounts:
    same: int = 0
    added: int = 0
    removed: int = 0
    changed: int = 0
    rows: list[DiffRow] = field(default_factory=list)

    @property
    def any(self) -> bool:
        return bool(self.added or self.removed or self.changed)


def _key(row: _Row) -> tuple[str, str, int]:
    return row.role, row.full, row.byte_size


def _replace(out: DiffCounts, old: list[Any], new: list[Any]) -> None:
    for i in range(max(len(old), len(new))):
        a, b = (old[i] if i < len(old) else None), (new[i] if i < len(new) else None)
        status = "changed" if a is not None and b is not None else ("removed" if b is None else "added")
        setattr(out, status, getattr(out, status) + 1)
        out.rows.append(DiffRow(status, a, b))


def diff_views(current: list[Any], new: list[Any]) -> DiffCounts:
    """Aligned rows of both views in order, each with its status, and the counts."""
    out = DiffCounts()
    matcher = difflib.SequenceMatcher(a=[_key(r) for r in current], b=[_key(r) for r in new], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            out.same += i2 - i1
            out.rows += [DiffRow("same", a, b) for a, b in zip(current[i1:i2], new[j1:j2], strict=True)]
        else:
            _replace(out, current[i1:i2], new[j1:j2])
    return out
