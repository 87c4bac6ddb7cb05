"""The events a provider streams for a given answer, built from the SDKs' event types (not copied from docs).

Anthropic (anthropic `types/raw_message_stream_event.py` and its members): `message_start` with the message
emptied, per block `content_block_start` (text "", tool input {}, thinking "" with signature "", whole
redacted_thinking and server-tool results), its deltas and `content_block_stop`, a `ping`, `message_delta`
with the stop reason and cumulative usage, `message_stop`. Responses (openai `types/responses/
response_stream_event.py`): `response.created` / `in_progress` with an empty output, per item `output_item
.added` (emptied), its parts and deltas, `output_item.done` (whole), then `response.completed` with the whole
response; every event carries an increasing `sequence_number`. The scripted upstreams stream with these, and
the assembler tests check them against the SDKs' own accumulators.
"""
from __future__ import annotations

import copy
import json
from typing import Any

__all__ = ["anthropic_events", "responses_events", "sse", "chunks"]

WHOLE_BLOCKS = ("redacted_thinking", "server_tool_use", "web_search_tool_result")


def chunks(text: str, size: int = 7) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


def sse(events: list[dict[str, Any]], *, names: bool = True) -> bytes:
    """The events as SSE bytes, each with its `event:` line (Anthropic's SDK dispatches on it)."""
    out = b""
    for event in events:
        head = f"event: {event['type']}\n".encode() if names else b""
        out += head + b"data: " + json.dumps(event, ensure_ascii=False).encode() + b"\n\n"
    return out


def _block_events(index: int, block: dict[str, Any]) -> list[dict[str, Any]]:
    kind = block["type"]
    if kind in WHOLE_BLOCKS:
        return [{"type": "content_block_start", "index": index, "content_block": block}]
    start = dict(block)
    deltas: list[dict[str, Any]] = []
    if kind == "text":
        start["text"] = ""
        start.pop("citations", None)
        deltas = [{"type": "text_delta", "text": piece} for piece in chunks(block["text"])]
        deltas += [{"type": "citations_delta", "citation": c} for c in block.get("citations") or []]
    elif kind == "tool_use":
        start["input"] = {}
        deltas = [{"type": "input_json_delta", "partial_json": piece} for piece in chunks(json.dumps(block["input"]))]
    elif kind == "thinking":
        start.update(thinking="", signature="")
        deltas = [{"type": "thinking_delta", "thinking": piece} for piece in chunks(block["thinking"])]
        deltas.append({"type": "signature_delta", "signature": block["signature"]})
    return [{"type": "content_block_start", "index": index, "content_block": start},
            *({"type": "content_block_delta", "index": index, "delta": d} for d in deltas)]


def anthropic_events(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The Messages stream of `message` (a whole answer: id, content, stop_reason, usage)."""
    usage = dict(message.get("usage") or {})
    start = {**copy.deepcopy(message), "content": [], "stop_reason": None, "stop_sequence": None,
             "usage": {**usage, "output_tokens": 1}}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}, {"type": "ping"}]
    for index, block in enumerate(message["content"]):
        events += _block_events(index, block)
        events.append({"type": "content_block_stop", "index": index})
    events.append({"type": "message_delta", "delta": {"stop_reason": message.get("stop_reason"),
                                                      "stop_sequence": message.get("stop_sequence")},
                   "usage": {"output_tokens": usage.get("output_tokens", 0)}})
    return [*events, {"type": "message_stop"}]


def _item_events(index: int, item: dict[str, Any]) -> list[dict[str, Any]]:
    added, events = copy.deepcopy(item), []
    item_id = item.get("id", "")
    where = {"item_id": item_id, "output_index": index}
    if item["type"] == "message":
        added.update(content=[], status="in_progress")
        for part_index, part in enumerate(item["content"]):
            empty = {**part, "text": ""} if part["type"] == "output_text" else part
            events.append({"type": "response.content_part.added", **where, "content_index": part_index,
                           "part": empty})
            if part["type"] == "output_text":
                events += [{"type": "response.output_text.delta", **where, "content_index": part_index,
                            "delta": piece, "logprobs": []} for piece in chunks(part["text"])]
                events.append({"type": "response.output_text.done", **where, "content_index": part_index,
                               "text": part["text"], "logprobs": []})
            events.append({"type": "response.content_part.done", **where, "content_index": part_index,
                           "part": part})
    elif item["type"] == "function_call":
        added.update(arguments="", status="in_progress")
        events += [{"type": "response.function_call_arguments.delta", **where, "delta": piece}
                   for piece in chunks(item["arguments"])]
        events.append({"type": "response.function_call_arguments.done", **where, "name": item["name"],
                       "arguments": item["arguments"]})
    elif item["type"] == "reasoning":
        added["summary"] = []
        for summary_index, part in enumerate(item.get("summary") or []):
            at = {**where, "summary_index": summary_index}
            events.append({"type": "response.reasoning_summary_part.added", **at,
                           "part": {"type": "summary_text", "text": ""}})
            events += [{"type": "response.reasoning_summary_text.delta", **at, "delta": piece}
                       for piece in chunks(part["text"])]
            events.append({"type": "response.reasoning_summary_text.done", **at, "text": part["text"]})
            events.append({"type": "response.reasoning_summary_part.done", **at, "part": part})
    return [{"type": "response.output_item.added", "output_index": index, "item": added}, *events,
            {"type": "response.output_item.done", "output_index": index, "item": item}]


def responses_events(response: dict[str, Any], *, terminal: str = "response.completed") -> list[dict[str, Any]]:
    """The Responses stream of `response` (a whole response object), ending with `terminal`."""
    opening = {**copy.deepcopy(response), "status": "in_progress", "output": [], "usage": None}
    events: list[dict[str, Any]] = [{"type": "response.created", "response": opening},
                                    {"type": "response.in_progress", "response": opening}]
    for index, item in enumerate(response["output"]):
        events += _item_events(index, item)
    events.append({"type": terminal, "response": response})
    return [{**event, "sequence_number": n} for n, event in enumerate(events)]
