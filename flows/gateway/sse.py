"""Server-sent events of a streamed chat completion: split the byte stream into events, assemble the answer."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

__all__ = ["EventSplitter", "Assembler", "event_data"]

DONE = "[DONE]"


class EventSplitter:
    """Feed bytes, get whole events (each ending in a blank line) back, byte for byte."""

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, chunk: bytes) -> list[bytes]:
        self._buffer += chunk.replace(b"\r\n", b"\n")
        events: list[bytes] = []
        while True:
            end = self._buffer.find(b"\n\n")
            if end < 0:
                return events
            events.append(self._buffer[:end + 2])
            self._buffer = self._buffer[end + 2:]

    @property
    def pending(self) -> bytes:
        return self._buffer


def event_data(event: bytes) -> str | None:
    """The `data:` payload of one event (lines joined), None for comments and other fields."""
    lines = [line[5:].lstrip() for line in event.decode("utf-8", "replace").split("\n") if line.startswith("data:")]
    return "\n".join(lines) if lines else None


@dataclass
class Assembler:
    """The assistant message and usage, rebuilt from `chat.completion.chunk` payloads."""

    text: list[str] = field(default_factory=list)
    calls: dict[int, dict[str, Any]] = field(default_factory=dict)
    usage: dict[str, Any] | None = None
    done: bool = False
    finish_reason: str | None = None

    def feed(self, data: str) -> dict[str, Any] | None:
        """Take one payload; returns the parsed chunk (None for [DONE]). Raises ValueError on garbage."""
        if data.strip() == DONE:
            self.done = True
            return None
        chunk = json.loads(data)
        if not isinstance(chunk, dict):
            raise ValueError("a stream chunk is not a JSON object")
        if isinstance(chunk.get("error"), dict):
            raise ValueError(str(chunk["error"].get("message") or "the upstream reported an error mid-stream"))
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            if isinstance(choice, dict) and choice.get("index", 0) == 0:
                self._choice(choice)
        return chunk

    def _choice(self, choice: dict[str, Any]) -> None:
        self.finish_reason = choice.get("finish_reason") or self.finish_reason
        delta = choice.get("delta") or {}
        if isinstance(delta.get("content"), str):
            self.text.append(delta["content"])
        for part in delta.get("tool_calls") or []:
            slot = self.calls.setdefault(int(part.get("index", 0)),
                                         {"id": "", "type": "function", "function": {"name": "", "arguments": ""}})
            slot["id"] = part.get("id") or slot["id"]
            fn = part.get("function") or {}
            slot["function"]["name"] += fn.get("name") or ""
            slot["function"]["arguments"] += fn.get("arguments") or ""

    def message(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": "assistant", "content": "".join(self.text) if self.text else None}
        if self.calls:
            out["tool_calls"] = [self.calls[i] for i in sorted(self.calls)]
        return out
