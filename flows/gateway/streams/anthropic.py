"""An Anthropic Messages stream assembled into its final message, the way the SDK's `accumulate_event` does.

`message_start` carries the message with empty content; `content_block_start` appends a block, the deltas of
its index grow it (`text_delta` text, `input_json_delta` the tool input's JSON, parsed at the block's stop,
`thinking_delta` thinking, `signature_delta` the signature, `citations_delta` one citation); `message_delta`
sets the stop reason and replaces the usage counts it carries (they are cumulative); `message_stop` completes
it. `ping` and event types not invented yet are skipped; an `error` event ends the stream as an error.
"""
from __future__ import annotations

import copy
import json
from typing import Any

from flows.gateway.streams.outcome import COMPLETE, ERROR, INCOMPLETE, INVALID, StreamOutcome
from flows.gateway.streams.sse import EventAssembler

__all__ = ["AnthropicStream"]

TEXT_DELTAS = {"text_delta": ("text", "text"), "thinking_delta": ("thinking", "thinking")}


class AnthropicStream(EventAssembler):
    """Feed the events of one stream; `outcome()` says how it ended (the message only when it completed)."""

    format_name = "an Anthropic stream"

    def __init__(self) -> None:
        super().__init__()
        self.message: dict[str, Any] | None = None
        self._json: dict[int, str] = {}

    def snapshot(self) -> dict[str, Any] | None:
        return self.message

    def _apply(self, kind: str, data: dict[str, Any]) -> None:
        if kind == "error":
            nested = data.get("error")
            error: dict[str, Any] = nested if isinstance(nested, dict) else data
            self._ended = StreamOutcome(ERROR, partial=self.message, error=error,
                                        reason=str(error.get("message") or "the upstream reported an error"))
        elif kind == "message_start":
            if self.message is not None:
                raise ValueError("a second message_start")
            self.message = copy.deepcopy(data["message"])
            self.message["content"] = list(self.message.get("content") or [])
        elif kind == "ping" or not kind.startswith(("message_", "content_block_")):
            return  # keep-alive, or an event type newer than this code
        elif self.message is None:
            raise ValueError(f"{kind} before message_start")
        elif kind == "content_block_start":
            self.message["content"].append(copy.deepcopy(data["content_block"]))
        elif kind == "content_block_delta":
            self._delta(self.message["content"][data["index"]], data["index"], data["delta"])
        elif kind == "content_block_stop":
            self._stop(self.message["content"][data["index"]], data["index"])
        elif kind == "message_delta":
            self._message_delta(self.message, data)
        elif kind == "message_stop":
            self._ended = StreamOutcome(COMPLETE, answer=self.message)

    def _delta(self, block: dict[str, Any], index: int, delta: dict[str, Any]) -> None:
        kind = delta.get("type")
        if kind in TEXT_DELTAS:
            key, field = TEXT_DELTAS[kind]
            block[key] = str(block.get(key) or "") + str(delta[field])
        elif kind == "input_json_delta":
            self._json[index] = self._json.get(index, "") + str(delta["partial_json"])
        elif kind == "signature_delta":
            block["signature"] = delta["signature"]
        elif kind == "citations_delta":
            block["citations"] = [*(block.get("citations") or []), delta["citation"]]

    def _stop(self, block: dict[str, Any], index: int) -> None:
        text = self._json.pop(index, "")
        if text:
            block["input"] = json.loads(text)

    @staticmethod
    def _message_delta(message: dict[str, Any], data: dict[str, Any]) -> None:
        delta = data.get("delta") or {}
        for key in ("stop_reason", "stop_sequence", "stop_details", "container"):
            if key in delta and (key != "container" or delta[key] is not None):
                message[key] = delta[key]
        usage = message.setdefault("usage", {})
        for key, value in (data.get("usage") or {}).items():
            if value is not None or key == "output_tokens":
                usage[key] = value

    def outcome(self) -> StreamOutcome:
        """How the stream ended; before `message_stop` (or with a tool input still open) it is incomplete."""
        if self._ended is not None:
            return self._ended
        if self.message is None:
            return StreamOutcome(INVALID, reason="the stream ended before message_start")
        return StreamOutcome(INCOMPLETE, partial=self.message, reason="the stream ended before message_stop")
