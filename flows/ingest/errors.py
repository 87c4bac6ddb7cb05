"""Why a batch cannot be stored, and what an append reports."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from flows.models import Message

__all__ = ["AppendError", "AppendResult"]


class AppendError(ValueError):
    """A batch that cannot be stored; nothing of it was written. `status` is the HTTP status it maps to."""

    def __init__(self, code: str, reason: str, *, index: int | None = None, field: str = "",
                 status: int = 400, extra: dict[str, Any] | None = None) -> None:
        where = f"message {index}: " if index is not None else ""
        super().__init__(where + (f"{field}: " if field else "") + reason)
        self.code, self.reason, self.index, self.field, self.status = code, reason, index, field, status
        self.extra = extra or {}


@dataclass
class AppendResult:
    appended: int
    last_seq: int
    rows: list[Message] = field(default_factory=list)
    turn_completed: bool = False
    # "none" (no turn ended, or the caller summarizes itself), "coalesced" (a run of this chain already waits in
    # the queue and covers the turn: ingest.append.summary_decision), "pending" until the batch commits, then
    # "queued" or flows.core.NOT_QUEUED_REASON (the broker did not answer; the sweep queues it once it does)
    summarization: str = "none"
