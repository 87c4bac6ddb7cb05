"""OpenAI Responses (`POST /v1/responses`) on the protocol layer: the shapes are in `responses_wire.py`, our ids
in `response_store.py`, the stream assembly in `streams/`; this module plugs them in.

Both ways clients keep state work: a stateless client (`store: false`, the whole `input` every time, as Codex
does) threads by prefix like Chat Completions; a stateful one sends `previous_response_id` (ours), resolved to
the conversation we hold (`resolve`), so manage mode sends the fitted view as the whole `input` and observe mode
forwards the agent's bytes with the upstream's id in its place (or the whole conversation when the upstream did
not keep it). The agent only ever sees our ids: the upstream's are renamed in every answer and event.

A streamed answer's first events (`response.created`, `response.in_progress`) are held back until its first
output arrives, so an overflow the upstream reports inside the stream (`response.failed` with
`context_length_exceeded`) is compacted and retried before the agent has seen a response begin.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from flows.engine import is_context_overflow_error
from flows.gateway import upstream
from flows.gateway.prefixes import extend_hash, prefix_hashes
from flows.gateway.protocols.base import ExtraTokens, Msg, Protocol, StreamReader, StreamResult, tools_and_reserve
from flows.gateway.response_store import Resolved, new_response_id, remember, resolve_previous, response_save
from flows.gateway.responses_wire import (
    ResponsesRequest,
    answer_message,
    conversation,
    parse_responses_request,
    response_object,
    stateless_conversation,
    upstream_json,
    with_ids,
    with_previous,
)
from flows.gateway.streams import ResponsesStream, SseParser
from flows.gateway.wire import GatewayError, WireRequest, openai_upstream_error, with_model
from flows.ingest import bearer_value
from flows.models import GatewayCall, ProviderConfig, ProviderKind

__all__ = ["ResponsesProtocol", "RESPONSES", "ResponsesCall", "usage_of"]

_HELD_UNTIL = ("response.output_item.added", "response.content_part.added", "response.output_text.delta",
               "response.completed", "response.incomplete", "error")


@dataclass
class ResponsesCall(WireRequest):
    """A Responses request once read: the WireRequest plus what this wire needs along the call."""

    wire: ResponsesRequest | None = None
    response_id: str = field(default_factory=new_response_id)  # ours, for the answer
    previous: Resolved | None = None  # the stored conversation `previous_response_id` continues
    final: dict[str, Any] | None = None  # the response object as the agent got it (our ids)
    upstream_id: str = ""  # the upstream's id of the answer

    def renames(self, upstream_id: str) -> dict[str, str]:
        """Upstream ids -> ours in what the agent gets: the answer's id, and the previous one echoed back."""
        out = {upstream_id: self.response_id}
        if self.previous is not None and self.previous.row.upstream_id:
            out[self.previous.row.upstream_id] = self.previous.row.response_id
        return out


def usage_of(response: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The response's usage with the Chat Completions names beside its own (costs and pages read those)."""
    usage = response.get("usage") if response is not None else None
    if not isinstance(usage, dict):
        return None
    return {**usage, "prompt_tokens": usage.get("input_tokens"), "completion_tokens": usage.get("output_tokens")}


class _ResponsesStream(StreamReader):
    def __init__(self, call: ResponsesCall) -> None:
        self.call, self.parser, self.assembler = call, SseParser(), ResponsesStream()
        self.held: list[bytes] = []
        self.started = False  # the agent has been sent events of this attempt
        call.upstream_id = ""  # a retry's stream is a new response

    def feed(self, chunk: bytes) -> list[bytes]:
        out: list[bytes] = []
        for event in self.parser.feed(chunk):
            out += self._event(event)
        return out

    def _event(self, event: Any) -> list[bytes]:
        self.assembler.feed(event)
        if not self.call.upstream_id and self.assembler.response is not None:
            self.call.upstream_id = str(self.assembler.response.get("id") or "")
        raw = with_ids(event.raw, self.call.renames(self.call.upstream_id))
        if self.started:
            return [raw]
        self.held.append(raw)
        kind = _kind(event)
        if kind in _HELD_UNTIL or (kind == "response.failed" and not self.overflow()):
            return self.release()
        return []

    def release(self) -> list[bytes]:
        """The held-back events (when no retry follows), from now on events go out as they come."""
        out, self.held, self.started = self.held, [], True
        return out

    def overflow(self) -> str:
        """The upstream's overflow error when the stream failed with one before any output, else ''."""
        outcome = self.assembler.outcome()
        if outcome.status != "failed" or self.started:
            return ""
        text = json.dumps(outcome.error or {}, ensure_ascii=False)
        return text if is_context_overflow_error(text) else ""

    def text(self) -> str:
        snapshot = self.assembler.snapshot() or {}
        return "".join(str(part.get("text") or "") for item in snapshot.get("output") or []
                       if isinstance(item, dict) and item.get("type") == "message"
                       for part in item.get("content") or [] if isinstance(part, dict))

    def result(self) -> StreamResult:
        for event in self.parser.finish():
            self._event(event)
        outcome = self.assembler.outcome()
        final = outcome.answer or outcome.partial
        if final is not None:
            renamed = with_ids(json.dumps(final, ensure_ascii=False).encode(), self.call.renames(self.call.upstream_id))
            self.call.final = json.loads(renamed)
        usage = usage_of(final)
        if not outcome.complete:
            told = self.started and outcome.status in ("failed", "error", "incomplete")
            return StreamResult(None, usage, outcome.reason, reported=told, overflow=self.overflow())
        answer = answer_message(outcome.answer or {})
        if answer is None:
            return StreamResult(None, usage, "the response's output is not one assistant turn", reported=True)
        return StreamResult(answer, usage)


def _kind(event: Any) -> str:
    try:
        data = event.json()
    except ValueError:
        return ""
    return str(data.get("type") or event.event or "") if isinstance(data, dict) else ""


class ResponsesProtocol(Protocol):
    name = "responses"
    output_fields = ("max_output_tokens",)
    provider_kind: str = str(ProviderKind.OPENAI)

    def api_key(self, headers: Mapping[str, str]) -> str | None:
        return bearer_value(headers.get("Authorization", ""))

    def parse(self, raw: bytes, headers: Mapping[str, str], query: str) -> WireRequest:
        wire = parse_responses_request(raw)
        return ResponsesCall(body=wire.body, raw=raw, model=wire.model, messages=[], stream=wire.stream, hashes=[],
                             wire=wire)

    def resolve(self, request: WireRequest, user: Any) -> WireRequest:
        """The conversation as our messages: the stored one `previous_response_id` names (404 unless it is one
        of `user`'s), then this request's input."""
        call = _call(request)
        wire = _wire(call)
        if wire.previous_id is None:
            call.messages, call.hashes = stateless_conversation(wire)
            return call
        call.previous = resolve_previous(user, wire.previous_id)
        history = call.previous.messages
        call.messages = conversation(wire, history)
        known = call.previous.hashes if call.messages[:len(history)] == history else None
        call.hashes = prefix_hashes(call.messages, known)
        return call

    def extra_tokens(self, request: WireRequest) -> ExtraTokens:
        tools = [{**{k: t[k] for k in ("name", "description") if k in t}, "input_schema": t.get("parameters")}
                 if isinstance(t, dict) and t.get("type") == "function" else t
                 for t in request.body.get("tools") or []]
        return tools_and_reserve(tools, request.body.get("max_output_tokens"), model=request.model or None)

    def error_body(self, exc: GatewayError) -> bytes:
        return exc.payload()

    def rebuilt(self, request: WireRequest, model: str, messages: list[Msg], *, manage: bool) -> dict[str, Any]:
        body: dict[str, Any] = json.loads(upstream_json(_wire(_call(request)), model, messages))
        return body

    def upstream_body(self, request: WireRequest, model: str, messages: list[Msg] | None, *,
                      manage: bool = False, max_output: int | None = None) -> bytes:
        """Observe mode continuing a stored conversation: the agent's bytes with the upstream's id of it when
        the upstream kept it, else the whole conversation (the upstream holds nothing to continue). A fitted
        view carries the max output the fit clamped (`max_output`)."""
        call = _call(request)
        if messages is not None or call.previous is None:
            built = upstream_json(_wire(call), model, messages)
            if max_output is None or messages is None:
                return built
            body = json.loads(built)
            body.update({f: max_output for f in self.output_fields if body.get(f) is not None})
            return json.dumps(body, ensure_ascii=False).encode("utf-8")
        row = call.previous.row
        raw = with_previous(request.raw, row.upstream_id) if row.upstream_stored and row.upstream_id else None
        if raw is not None and model != request.body["model"]:
            raw = with_model(raw, request.body["model"], model)
        return raw if raw is not None else upstream_json(_wire(call), model, call.messages)

    def endpoint(self, provider: ProviderConfig, request: WireRequest) -> tuple[str, dict[str, str]]:
        return upstream.responses_endpoint(provider)

    def upstream_error(self, status: int, raw: bytes) -> GatewayError:
        return openai_upstream_error(status, raw)

    def answer(self, raw: bytes) -> tuple[Msg, dict[str, Any] | None]:
        response = response_object(raw)
        answer = answer_message(response)
        if answer is None:
            raise GatewayError(502, "the upstream's response output is not one assistant turn",
                               type_="server_error", code="upstream_garbage")
        return answer, usage_of(response)

    def reply(self, request: WireRequest, raw: bytes) -> bytes:
        """The whole answer as the agent gets it: our ids in place of the upstream's."""
        call = _call(request)
        call.upstream_id = str(response_object(raw)["id"])
        renamed = with_ids(raw, call.renames(call.upstream_id))
        call.final = json.loads(renamed)
        return renamed

    def stream_reader(self, request: WireRequest, *, manage: bool) -> StreamReader:
        return _ResponsesStream(_call(request))

    def stream_error(self, message: str) -> bytes:
        payload = {"type": "error", "code": "upstream_stream_broken", "message": message, "param": None}
        return b"event: error\ndata: " + json.dumps(payload).encode() + b"\n\n"

    def recorded(self, request: WireRequest, call: GatewayCall, answer: Msg | None) -> None:
        """With the call's record: the response under our id, and the conversation through it remembered."""
        wire_call = _call(request)
        if wire_call.final is None:
            return
        head = request.hashes[-1]
        history_hash = extend_hash(head, answer) if answer is not None else head
        seq_to = call.response_seq if call.response_seq is not None else call.sent_raw_seq_to
        response_save(response_id=wire_call.response_id, call=call, seq_to=seq_to, history_hash=history_hash,
                      upstream_id=wire_call.upstream_id, upstream_stored=_wire(wire_call).stored,
                      body=wire_call.final)
        if answer is not None:
            remember(wire_call.response_id, [*request.messages, answer], [*request.hashes, history_hash])


def _call(request: WireRequest) -> ResponsesCall:
    if not isinstance(request, ResponsesCall):
        raise TypeError("a Responses call expected")
    return request


def _wire(call: ResponsesCall) -> ResponsesRequest:
    if call.wire is None:
        raise TypeError("a parsed Responses request expected")
    return call.wire


RESPONSES = ResponsesProtocol()
