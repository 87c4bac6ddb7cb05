"""Server-sent events: split a byte stream into events (name, data, raw bytes), as the SSE standard frames them.

Lines end in CR LF, LF or CR; a blank line ends an event; `data:` lines are joined with newlines, `event:`
names it, a line starting with `:` is a comment, one space after the colon is dropped, other fields are
ignored. Each event keeps its bytes (line ends as LF, with its closing blank line) so a gateway can pass
events through as they arrived.
"""
from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from flows.gateway.streams.outcome import INVALID, StreamOutcome

__all__ = ["SseEvent", "SseParser", "EventAssembler", "assemble"]


@dataclass(frozen=True)
class SseEvent:
    event: str | None
    data: str
    raw: bytes

    def json(self) -> Any:
        """The data as JSON; ValueError when it is not."""
        return json.loads(self.data)


class SseParser:
    """Feed bytes as they arrive, get the events they complete; `pending` holds a started, unfinished event."""

    def __init__(self) -> None:
        self._buffer = b""
        self._cr = b""  # a CR at a chunk's end may be the first half of a CR LF

    def feed(self, chunk: bytes) -> list[SseEvent]:
        data, self._cr = self._cr + chunk, b""
        if data.endswith(b"\r"):
            data, self._cr = data[:-1], b"\r"
        self._buffer += data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        *complete, self._buffer = self._buffer.split(b"\n\n")
        return [event for event in map(_parse, complete) if event is not None]

    def finish(self) -> list[SseEvent]:
        """At the end of the stream: a CR held back was a line end after all."""
        if not self._cr:
            return []
        self._cr = b""
        return self.feed(b"\n")

    @property
    def pending(self) -> bytes:
        return (self._buffer + self._cr).strip(b"\n")


def _parse(raw: bytes) -> SseEvent | None:
    name: str | None = None
    data: list[str] = []
    for line in raw.decode("utf-8", "replace").split("\n"):
        if not line or line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "event":
            name = value
        elif field == "data":
            data.append(value)
    if not data:
        return None  # an event without data is not dispatched
    return SseEvent(event=name, data="\n".join(data), raw=raw + b"\n\n")


class EventAssembler:
    """What both assemblers share: every event's data is a JSON object, dispatched on its `type` (else the
    event's name); anything else, or an event the format does not allow there, ends the stream as invalid."""

    format_name = "an event"

    def __init__(self) -> None:
        self._ended: StreamOutcome | None = None

    def feed(self, event: SseEvent) -> None:
        if self._ended is not None:
            return
        try:
            data = event.json()
            if not isinstance(data, dict):
                raise ValueError("an event's data is not a JSON object")
            self._apply(str(data.get("type") or event.event or ""), data)
        except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
            self._ended = StreamOutcome(INVALID, partial=self.snapshot(), reason=f"not {self.format_name}: {exc}")

    def _apply(self, kind: str, data: dict[str, Any]) -> None:
        raise NotImplementedError

    def snapshot(self) -> dict[str, Any] | None:
        """What has arrived so far."""
        raise NotImplementedError

    def outcome(self) -> StreamOutcome:
        raise NotImplementedError


def assemble(assembler: EventAssembler, chunks: Iterable[bytes]) -> StreamOutcome:
    """Run a whole byte stream through `assembler` (the gateway feeds it chunk by chunk instead)."""
    parser = SseParser()
    for chunk in chunks:
        for event in parser.feed(chunk):
            assembler.feed(event)
    for event in parser.finish():
        assembler.feed(event)
    return assembler.outcome()
