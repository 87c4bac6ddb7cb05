"""OpenAI Chat Completions (`POST /v1/chat/completions`) on the protocol layer: the shapes are in `wire.py`
(request, messages, error JSON) and `sse.py` (the chunk assembler); this module plugs them in."""
from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from flows.engine import validate_messages
from flows.gateway import upstream
from flows.gateway.protocols.base import ExtraTokens, Msg, Protocol, StreamReader, StreamResult
from flows.gateway.request_needs import OUTPUT_FIELDS, chat_needs, check_chat_fields
from flows.gateway.sse import Assembler, EventSplitter, event_data
from flows.gateway.wire import (
    AgentFields,
    GatewayError,
    WireRequest,
    error_body,
    openai_upstream_error,
    parse_chat_request,
    storable,
)
from flows.ingest import bearer_value
from flows.models import ProviderConfig, ProviderKind

__all__ = ["ChatProtocol", "CHAT"]


class _ChatStream(StreamReader):
    def __init__(self, request: WireRequest, *, manage: bool) -> None:
        self.splitter, self.assembler = EventSplitter(), Assembler()
        # manage mode asks for the usage chunk (see rebuilt); an agent that did not ask must not see it
        self.hide_usage = manage and not request.wants_usage

    def feed(self, chunk: bytes) -> list[bytes]:
        out = []
        for event in self.splitter.feed(chunk):
            data = event_data(event)
            parsed = self.assembler.feed(data) if data is not None else None
            if not (self.hide_usage and parsed is not None and not parsed.get("choices") and "usage" in parsed):
                out.append(event)
        return out

    def text(self) -> str:
        return "".join(self.assembler.text)

    def result(self) -> StreamResult:
        if not self.assembler.done:
            return StreamResult(None, self.assembler.usage, "the upstream closed the stream before [DONE]")
        return StreamResult(self.assembler.message(), self.assembler.usage)


class ChatProtocol(Protocol):
    name = "chat"
    provider_kind: str = str(ProviderKind.OPENAI)
    output_fields = OUTPUT_FIELDS

    def api_key(self, headers: Mapping[str, str]) -> str | None:
        return bearer_value(headers.get("Authorization", ""))

    def parse(self, raw: bytes, headers: Mapping[str, str], query: str) -> WireRequest:
        request = parse_chat_request(raw)
        check_chat_fields(request.body)  # the fields the fit reads: a 400 before anything is written
        return request

    def extra_tokens(self, request: WireRequest) -> ExtraTokens:
        """Tools as OpenAI renders them, `response_format`, `max_completion_tokens` else `max_tokens`."""
        needs = chat_needs(request.body, request.model)
        return ExtraTokens(tools=needs.tools, reserve=needs.max_output, schema=needs.schema)

    def error_body(self, exc: GatewayError) -> bytes:
        return exc.payload()

    def rebuilt(self, request: WireRequest, model: str, messages: list[Msg], *, manage: bool) -> dict[str, Any]:
        body = {**request.body, "model": model, "messages": AgentFields(request.messages).wire_messages(messages)}
        if request.stream and manage:
            body["stream_options"] = {**(request.body.get("stream_options") or {}), "include_usage": True}
        return body

    def endpoint(self, provider: ProviderConfig, request: WireRequest) -> tuple[str, dict[str, str]]:
        return upstream.chat_endpoint(provider)

    def upstream_error(self, status: int, raw: bytes) -> GatewayError:
        return openai_upstream_error(status, raw)

    def answer(self, raw: bytes) -> tuple[Msg, dict[str, Any] | None]:
        try:
            parsed = json.loads(raw)
            message = parsed["choices"][0]["message"]
            answer = storable({**message, "role": "assistant"}, 0)
            validate_messages([answer])
        except Exception:
            raise GatewayError(502, "the upstream answered something that is not a chat completion",
                               type_="server_error", code="upstream_garbage") from None
        usage = parsed.get("usage")
        return answer, usage if isinstance(usage, dict) else None

    def stream_reader(self, request: WireRequest, *, manage: bool) -> StreamReader:
        return _ChatStream(request, manage=manage)

    def stream_error(self, message: str) -> bytes:
        return b"data: " + error_body(message, "server_error", "upstream_stream_broken") + b"\n\n"


CHAT = ChatProtocol()
