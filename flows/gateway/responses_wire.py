"""The OpenAI Responses wire format (`POST /v1/responses`): parse a request, rebuild its body, read its answer.

Interpreted: `model`, `input`, `instructions`, `stream`, `store`, `previous_response_id`; everything else
(`tools`, `tool_choice`, `include`, `reasoning`, `max_output_tokens`, `truncation`, `text`, `metadata`, vendor
fields) passes through untouched. Items become our messages through the engine's lossless conversion
(`responses_to_messages`), so a view goes back upstream as the agent's own items, every `encrypted_content`
byte for byte, and item types we do not know ride along verbatim. Errors are OpenAI error JSON (GatewayError).
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from flows.engine import (
    FormatError,
    messages_to_responses,
    responses_output_messages,
    responses_resumable,
    responses_to_messages,
)
from flows.gateway.prefixes import Conversion, HistoryMemo, prefix_hashes
from flows.gateway.wire import GatewayError, check_model, json_object, with_model

__all__ = ["ResponsesRequest", "parse_responses_request", "conversation", "stateless_conversation",
           "items_conversion", "issued_calls", "upstream_json", "with_previous", "answer_message", "with_ids",
           "response_object"]

Msg = dict[str, Any]
_OPTIONAL_TYPES: dict[str, tuple[type, ...]] = {"stream": (bool,), "store": (bool,), "instructions": (str,),
                                               "previous_response_id": (str,), "include": (list,),
                                               "tools": (list,), "truncation": (str,)}


@dataclass
class ResponsesRequest:
    body: dict[str, Any]
    raw: bytes
    model: str
    stream: bool
    previous_id: str | None  # our id of the response this one continues

    @property
    def stored(self) -> bool:
        """Whether the agent asked the upstream to keep the response (`store` defaults to true)."""
        return self.body.get("store") is not False


def parse_responses_request(raw: bytes) -> ResponsesRequest:
    """The request's body checked for the fields we interpret (400 with OpenAI error JSON when malformed)."""
    body = json_object(raw)
    model = check_model(body.get("model"))
    if not isinstance(body.get("input"), (str, list)) or body["input"] in ("", []):
        raise GatewayError(400, "'input' must be a non-empty string or list of items", code="invalid_input")
    for field, types in _OPTIONAL_TYPES.items():
        if body.get(field) is not None and not isinstance(body[field], types):
            kind = " or ".join(t.__name__ for t in types)
            raise GatewayError(400, f"'{field}' must be a {kind}", code=f"invalid_{field}")
    previous = body.get("previous_response_id")
    return ResponsesRequest(body=body, raw=raw, model=model.strip(), stream=bool(body.get("stream")),
                            previous_id=previous.strip() or None if isinstance(previous, str) else None)


def issued_calls(messages: Iterable[Msg]) -> list[str]:
    """The tool-call ids of `messages`: the calls a continuing request's outputs may answer."""
    return [str(call.get("id")) for m in messages for call in m.get("tool_calls") or [] if isinstance(call, dict)]


def conversation(request: ResponsesRequest, history: list[Msg]) -> list[Msg]:
    """The agent's whole conversation as our messages: the stored `history` its `previous_response_id` names
    (empty for a stateless request) followed by this request's input; this request's `instructions`, when
    given, are the system message (a Responses request's instructions apply to that request only)."""
    doc = {"instructions": request.body.get("instructions"), "input": request.body["input"]}
    try:
        new = responses_to_messages(doc, issued=issued_calls(history), first=not history)
    except FormatError as exc:
        raise GatewayError(400, f"input: {exc}", code="invalid_input") from None
    if not history:
        return new
    if new and new[0]["role"] == "system" and doc["instructions"] is not None:
        rest = history[1:] if history[0]["role"] == "system" else history
        return [new[0], *rest, *new[1:]]
    return [*history, *new]


_HISTORIES = HistoryMemo()  # a stateless resend (the whole input every call) converts and hashes what it adds


def stateless_conversation(request: ResponsesRequest) -> tuple[list[Msg], list[str]]:
    """`conversation(request, [])` and its prefix hashes, for a request that continues no stored response:
    through the memo when its input is items, so a resend converts only the items it adds."""
    items = request.body["input"]
    if not isinstance(items, list):
        messages = conversation(request, [])
        return messages, prefix_hashes(messages)
    return _HISTORIES.derive(items, items_conversion(request), scope=request.body.get("instructions"))


def items_conversion(request: ResponsesRequest) -> Conversion:
    """How a stateless request's input items become our messages, for the memo: whole as `conversation` does;
    the items a resend adds after the calls issued before them, from where `responses_resumable` allows."""
    def tail(items: list[Any], start: int, before: list[Msg]) -> list[Msg]:
        if not start:
            return conversation(request, [])
        return responses_to_messages({"input": items[start:]}, issued=issued_calls(before), first=False)

    return Conversion(tail, responses_resumable)


def upstream_json(request: ResponsesRequest, model: str, messages: list[Msg] | None) -> bytes:
    """The body to send: the agent's own bytes (model spliced when it carried our provider prefix) when
    `messages` is None, else the body with `messages` as `instructions` + `input` and no
    `previous_response_id` (the whole conversation is in the input, whatever the upstream kept)."""
    if messages is None:
        if model == request.body["model"]:
            return request.raw
        spliced = with_model(request.raw, request.body["model"], model)
        if spliced is not None:
            return spliced
        return json.dumps({**request.body, "model": model}, ensure_ascii=False).encode("utf-8")
    body = {k: v for k, v in request.body.items() if k not in ("instructions", "input", "previous_response_id")}
    body.update(model=model, **messages_to_responses(messages))
    return json.dumps(body, ensure_ascii=False).encode("utf-8")


_PREVIOUS_MEMBER = re.compile(rb'"previous_response_id"\s*:\s*("(?:[^"\\]|\\.)*")')


def with_previous(raw: bytes, theirs: str) -> bytes | None:
    """`raw` with its one `previous_response_id` member naming the upstream's id, every other byte as it came
    (None when the member is not there exactly once: then the caller re-serializes)."""
    found = list(_PREVIOUS_MEMBER.finditer(raw))
    if len(found) != 1:
        return None
    start, end = found[0].span(1)
    return raw[:start] + json.dumps(theirs).encode() + raw[end:]


def answer_message(response: dict[str, Any]) -> Msg | None:
    """The response's output as the one assistant message the chain stores (None when it is not exactly one:
    an empty output, or items that do not make one assistant turn)."""
    output = response.get("output")
    if not isinstance(output, list) or not output:
        return None
    try:
        messages = responses_output_messages(output)
    except FormatError:
        return None
    if len(messages) != 1 or messages[0]["role"] != "assistant":
        return None
    return messages[0]


def with_ids(raw: bytes, renames: dict[str, str]) -> bytes:
    """`raw` (a response object or one stream event) with each upstream id of `renames` replaced by ours:
    ids are opaque tokens, so their quoted JSON string occurs nowhere else."""
    for theirs, ours in renames.items():
        if theirs and theirs != ours:
            raw = raw.replace(json.dumps(theirs).encode(), json.dumps(ours).encode())
    return raw


def response_object(raw: bytes) -> dict[str, Any]:
    """A non-streamed answer's response object (502 upstream_garbage when it is not one)."""
    try:
        parsed = json.loads(raw)
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict) or parsed.get("object") not in ("response", None) \
            or not isinstance(parsed.get("output"), list) or not isinstance(parsed.get("id"), str):
        raise GatewayError(502, "the upstream answered something that is not a Responses response",
                           type_="server_error", code="upstream_garbage")
    return parsed
