"""How a streamed answer ended: complete with its answer, or why not (the assemblers' one result type)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["StreamOutcome", "COMPLETE", "INCOMPLETE", "FAILED", "ERROR", "INVALID"]

COMPLETE = "complete"      # the terminal event arrived: `answer` is the final message / response
INCOMPLETE = "incomplete"  # the stream stopped early, or the response says `incomplete`
FAILED = "failed"          # a Responses stream ended in `response.failed`
ERROR = "error"            # the upstream sent an `error` event
INVALID = "invalid"        # bytes that are not this format's events (garbage, events out of order)


@dataclass(frozen=True)
class StreamOutcome:
    """`answer` only when complete; `partial` is what had arrived otherwise (for the record, never stored as
    an answer); `error` the upstream's error object for failed / error outcomes; `reason` in words."""

    status: str
    answer: dict[str, Any] | None = None
    partial: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    reason: str = ""

    @property
    def complete(self) -> bool:
        return self.status == COMPLETE
