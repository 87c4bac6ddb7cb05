"""An OpenAI Responses stream assembled into its final response object, as the SDK's stream helper does.

`response.created` opens the snapshot; `response.output_item.added` adds an item at its `output_index`,
`response.content_part.added` a part to a message, the text, arguments and reasoning-summary deltas grow them
and `response.output_item.done` replaces an item with its finished form. The answer is `response.completed`'s
response as sent (its output rebuilt from the finished items when it carries none, like the SDK);
`response.failed` / `response.incomplete` end the stream without an answer, an `error` event as an error.
Other event types (`*.done`, annotations, built-in tool progress, types not invented yet) are skipped.
"""
from __future__ import annotations

import copy
from typing import Any

from flows.gateway.streams.outcome import COMPLETE, ERROR, FAILED, INCOMPLETE, INVALID, StreamOutcome
from flows.gateway.streams.sse import EventAssembler

__all__ = ["ResponsesStream"]


class ResponsesStream(EventAssembler):
    """Feed the events of one stream; `outcome()` says how it ended (the response only when it completed)."""

    format_name = "a Responses stream"

    def __init__(self) -> None:
        super().__init__()
        self.response: dict[str, Any] | None = None
        self.items: dict[int, dict[str, Any]] = {}
        self.finished: dict[int, dict[str, Any]] = {}

    def _apply(self, kind: str, data: dict[str, Any]) -> None:
        if kind == "error":
            nested = data.get("error")
            flat = {k: data.get(k) for k in ("code", "message", "param")}  # the SDK's type is flat, the wire nested
            error: dict[str, Any] = nested if isinstance(nested, dict) else flat
            self._end(ERROR, error=error, reason=str(error.get("message") or "the upstream reported an error"))
        elif kind == "response.created":
            if self.response is not None:
                raise ValueError("a second response.created")
            self.response = copy.deepcopy(data["response"])
        elif not kind.startswith("response."):
            return
        elif self.response is None:
            raise ValueError(f"{kind} before response.created")
        elif kind == "response.output_item.added":
            self.items[int(data["output_index"])] = copy.deepcopy(data["item"])
        elif kind == "response.output_item.done":
            self.finished[int(data["output_index"])] = copy.deepcopy(data["item"])
        elif kind in ("response.completed", "response.failed", "response.incomplete"):
            self._terminal(kind, copy.deepcopy(data["response"]))
        else:
            self._delta(kind, data)

    def _delta(self, kind: str, data: dict[str, Any]) -> None:
        if kind not in ("response.content_part.added", "response.output_text.delta",
                        "response.function_call_arguments.delta", "response.reasoning_summary_part.added",
                        "response.reasoning_summary_text.delta"):
            return
        item = self.items[int(data["output_index"])]
        if kind == "response.content_part.added":
            item.setdefault("content", []).append(copy.deepcopy(data["part"]))
        elif kind == "response.output_text.delta":
            part = item["content"][int(data["content_index"])]
            part["text"] = str(part.get("text") or "") + str(data["delta"])
        elif kind == "response.function_call_arguments.delta":
            item["arguments"] = str(item.get("arguments") or "") + str(data["delta"])
        else:
            summary = item.setdefault("summary", [])
            index = int(data["summary_index"])
            while len(summary) <= index:
                summary.append({"type": "summary_text", "text": ""})
            if kind == "response.reasoning_summary_text.delta":
                summary[index]["text"] = str(summary[index].get("text") or "") + str(data["delta"])

    def _terminal(self, kind: str, response: dict[str, Any]) -> None:
        if response.get("output") is None:
            response["output"] = [self.finished[i] for i in sorted(self.finished)]
        if kind == "response.completed":
            if set(self.items) - set(self.finished) and not response["output"]:
                raise ValueError("response.completed with unfinished output items")
            self._ended = StreamOutcome(COMPLETE, answer=response)
        elif kind == "response.failed":
            found = response.get("error")
            error: dict[str, Any] = found if isinstance(found, dict) else {}
            self._end(FAILED, error=error, partial=response,
                      reason=str(error.get("message") or "the response failed"))
        else:
            reason = (response.get("incomplete_details") or {}).get("reason") or "unknown"
            self._end(INCOMPLETE, partial=response, reason=f"the response is incomplete: {reason}")

    def _end(self, status: str, *, error: dict[str, Any] | None = None, partial: dict[str, Any] | None = None,
             reason: str) -> None:
        self._ended = StreamOutcome(status, partial=partial or self.snapshot(), error=error, reason=reason)

    def snapshot(self) -> dict[str, Any] | None:
        """What has arrived so far: the response with the items as they stand."""
        if self.response is None:
            return None
        merged = {**self.items, **self.finished}
        return {**self.response, "output": [merged[i] for i in sorted(merged)]}

    def outcome(self) -> StreamOutcome:
        if self._ended is not None:
            return self._ended
        if self.response is None:
            return StreamOutcome(INVALID, reason="the stream ended before response.created")
        return StreamOutcome(INCOMPLETE, partial=self.snapshot(), reason="the stream ended before response.completed")
