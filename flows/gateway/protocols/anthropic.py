"""Anthropic's Messages API (`POST /v1/messages`) on the protocol layer.

The request's `system` and `messages` become our messages through the engine's lossless converter
(`anthropic_to_messages`: tool_use <-> tool calls, tool_result <-> tool messages, thinking as reasoning, every
block without a counterpart kept verbatim in the message's `anthropic` extension); every other field (tools,
tool_choice, thinking, metadata, stop_sequences, top-level cache_control, ...) passes through. A fitted view
goes back through `messages_to_anthropic` under Anthropic's rules (`manage.py`). Errors are Anthropic's
`{"type": "error", "error": {"type", "message"}}`; streams are read by `streams.AnthropicStream`.
"""
from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

import httpx2

from flows.engine import FormatError, anthropic_response_message, anthropic_to_messages, validate_messages
from flows.gateway import upstream
from flows.gateway.prefixes import Conversion, HistoryMemo
from flows.gateway.protocols.anthropic_manage import anthropic_view_body
from flows.gateway.protocols.base import ExtraTokens, Msg, Protocol, StreamReader, StreamResult, tools_and_reserve
from flows.gateway.responses_wire import issued_calls
from flows.gateway.streams import AnthropicStream, SseParser
from flows.gateway.wire import MAX_BODY_BYTES, GatewayError, WireRequest, check_model, json_object
from flows.ingest import bearer_value
from flows.models import ProviderConfig, ProviderKind

__all__ = ["AnthropicProtocol", "ANTHROPIC", "API_VERSION", "FORWARDED_HEADERS", "error_kind", "anthropic_error",
           "parse_messages_request", "turns_conversion", "messages_url", "upstream_headers", "upstream_count_tokens"]

API_VERSION = "2023-06-01"  # sent when the agent names none
DEFAULT_BASE_URL = "https://api.anthropic.com"
FORWARDED_HEADERS = ("anthropic-version", "anthropic-beta")
_HISTORIES = HistoryMemo()  # a resend converts and hashes only the turns it adds
_KINDS = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
          404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error", 529: "overloaded_error"}


def error_kind(status: int) -> str:
    """Anthropic's error type for an HTTP status (their documented pairs; other 4xx are invalid requests)."""
    return _KINDS.get(status, "invalid_request_error" if status < 500 else "api_error")


def anthropic_error(message: str, kind: str) -> bytes:
    return json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()


def _is_anthropic_error(raw: bytes) -> dict[str, Any] | None:
    try:
        parsed = json.loads(raw)
    except ValueError:
        return None
    error = parsed.get("error") if isinstance(parsed, dict) and parsed.get("type") == "error" else None
    return error if isinstance(error, dict) else None


def _checked_body(raw: bytes) -> dict[str, Any]:
    """The body read by the gateway's shared JSON reader (nesting, huge integers, lone surrogates, not an
    object: a 400, as on the other wires), with a model a call record can hold and a non-empty messages list."""
    if len(raw) > MAX_BODY_BYTES:
        raise GatewayError(413, f"request body over {MAX_BODY_BYTES} bytes", code="request_too_large")
    body = json_object(raw)
    check_model(body.get("model"))
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise GatewayError(400, "messages: must be a non-empty list", code="invalid_messages")
    if not isinstance(body.get("stream", False), bool):
        raise GatewayError(400, "stream: must be a boolean", code="invalid_stream")
    return body


def parse_messages_request(raw: bytes) -> tuple[dict[str, Any], list[Msg]]:
    """The body and our messages for a Messages (or count_tokens) request; GatewayError 400 when invalid."""
    body = _checked_body(raw)
    return body, _messages_of(body)


def _messages_of(body: dict[str, Any]) -> list[Msg]:
    try:
        return anthropic_to_messages(body)
    except FormatError as exc:
        raise GatewayError(400, f"messages: {exc}", code="invalid_messages") from None


def _every_turn_resumes(turns: list[Any], at: int) -> bool:
    return True  # a turn's messages depend only on the calls issued before it and the message before it


def turns_conversion(body: dict[str, Any]) -> Conversion:
    """How a request's turns become our messages, for the memo: whole as `parse_messages_request` does; the
    turns a resend adds after the calls issued before them and the message before them."""
    def tail(turns: list[Any], start: int, before: list[Msg]) -> list[Msg]:
        if not start:
            return _messages_of(body)
        return anthropic_to_messages({"messages": turns[start:]}, issued=issued_calls(before), follows=before[-1])

    return Conversion(tail, _every_turn_resumes)


def _memo_parse(raw: bytes) -> tuple[dict[str, Any], list[Msg], list[str]]:
    """`parse_messages_request` and the prefix hashes, through the memo: a resend converts only its new turns."""
    body = _checked_body(raw)
    messages, hashes = _HISTORIES.derive(body["messages"], turns_conversion(body), scope=body.get("system"))
    return body, messages, hashes


class _AnthropicStream(StreamReader):
    def __init__(self) -> None:
        self.parser, self.assembler = SseParser(), AnthropicStream()

    def feed(self, chunk: bytes) -> list[bytes]:
        events = self.parser.feed(chunk)
        for event in events:
            self.assembler.feed(event)
        return [event.raw for event in events]

    def text(self) -> str:
        message = self.assembler.snapshot() or {}
        return "".join(str(b.get("text") or "") for b in message.get("content") or [] if b.get("type") == "text")

    def result(self) -> StreamResult:
        for event in self.parser.finish():
            self.assembler.feed(event)
        outcome = self.assembler.outcome()
        usage = (outcome.answer or outcome.partial or {}).get("usage")
        usage = usage if isinstance(usage, dict) else None
        if outcome.answer is None:
            return StreamResult(None, usage, outcome.reason, reported=outcome.status == "error")
        try:
            return StreamResult(_stored_answer(outcome.answer), usage)
        except (FormatError, ValueError) as exc:
            return StreamResult(None, usage, f"the upstream's message is not valid: {exc}")


def _stored_answer(message: dict[str, Any]) -> Msg:
    answer = anthropic_response_message(message)
    validate_messages([answer])
    return answer


class AnthropicProtocol(Protocol):
    name = "anthropic"
    provider_kind: str = str(ProviderKind.ANTHROPIC)

    def api_key(self, headers: Mapping[str, str]) -> str | None:
        found = _header(headers, "x-api-key").strip()
        return found or bearer_value(_header(headers, "authorization"))

    def parse(self, raw: bytes, headers: Mapping[str, str], query: str) -> WireRequest:
        body, messages, hashes = _memo_parse(raw)
        forward = {name: value for name in FORWARDED_HEADERS if (value := _header(headers, name))}
        return WireRequest(body=body, raw=raw, model=str(body["model"]).strip(), messages=messages,
                           stream=body.get("stream", False), hashes=hashes, forward=forward, query=query)

    def extra_tokens(self, request: WireRequest) -> ExtraTokens:
        return tools_and_reserve(request.body.get("tools"), request.body.get("max_tokens"),
                                 model=request.model or None)

    def error_body(self, exc: GatewayError) -> bytes:
        if exc.body is not None and _is_anthropic_error(exc.body) is not None:
            return exc.body
        return anthropic_error(exc.message, error_kind(exc.status))

    def rebuilt(self, request: WireRequest, model: str, messages: list[Msg], *, manage: bool) -> dict[str, Any]:
        return anthropic_view_body(request, model, messages)

    def endpoint(self, provider: ProviderConfig, request: WireRequest) -> tuple[str, dict[str, str]]:
        return messages_url(provider, request.query), upstream_headers(provider, request.forward)

    def upstream_error(self, status: int, raw: bytes) -> GatewayError:
        error = _is_anthropic_error(raw)
        if error is not None:
            return GatewayError(status, str(error.get("message", "")), type_=str(error.get("type") or "api_error"),
                                body=raw)
        text = raw.decode("utf-8", "replace")[:2000] or f"HTTP {status}"
        return GatewayError(status, f"upstream error: {text}", type_="upstream_error", code="upstream_error")

    def answer(self, raw: bytes) -> tuple[Msg, dict[str, Any] | None]:
        try:
            parsed = json.loads(raw)
            if not isinstance(parsed, dict) or parsed.get("type") != "message":
                raise ValueError("not a message")
            answer = _stored_answer(parsed)
        except Exception:
            raise GatewayError(502, "the upstream answered something that is not an Anthropic message",
                               type_="server_error", code="upstream_garbage") from None
        usage = parsed.get("usage")
        return answer, usage if isinstance(usage, dict) else None

    def stream_reader(self, request: WireRequest, *, manage: bool) -> StreamReader:
        return _AnthropicStream()

    def stream_error(self, message: str) -> bytes:
        return b"event: error\ndata: " + anthropic_error(message, "api_error") + b"\n\n"


def _header(headers: Mapping[str, str], name: str) -> str:
    """A header by its name in any case (Django's `request.headers` title-cases them)."""
    for key, value in headers.items():
        if key.lower() == name:
            return value
    return ""


def messages_url(provider: ProviderConfig, query: str = "", path: str = "/messages") -> str:
    """The provider's Messages endpoint: a base URL with or without its `/v1` (PentAGI's ANTHROPIC_SERVER_URL
    carries it, the SDKs' base URLs do not)."""
    base = (provider.base_url or DEFAULT_BASE_URL).rstrip("/")
    url = base + path if base.endswith("/v1") else base + "/v1" + path
    return url + ("?" + query if query else "")


def upstream_headers(provider: ProviderConfig, forward: Mapping[str, str]) -> dict[str, str]:
    """The provider's key as `x-api-key`, the agent's `anthropic-version` (or ours) and `anthropic-beta`."""
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "anthropic-version": forward.get("anthropic-version") or API_VERSION}
    if forward.get("anthropic-beta"):
        headers["anthropic-beta"] = forward["anthropic-beta"]
    if provider.api_key:
        headers["x-api-key"] = provider.api_key
    return headers


async def upstream_count_tokens(provider: ProviderConfig, body: dict[str, Any], headers: dict[str, str],
                       query: str) -> bytes | None:
    """The Anthropic provider's own `count_tokens` answer, None when it has no such endpoint (or fails): then
    the gateway answers with its estimate."""
    forward = {k.lower(): v for k, v in headers.items() if k.lower() in FORWARDED_HEADERS}
    try:
        response = await asyncio.wait_for(upstream.client().post(
            messages_url(provider, query, "/messages/count_tokens"), content=json.dumps(body).encode(),
            headers=upstream_headers(provider, forward)), timeout=min(provider.timeout_seconds, 30.0))
    except (httpx2.HTTPError, TimeoutError):
        return None
    if response.status_code != 200:
        return None
    try:
        counted = json.loads(response.content)
    except ValueError:
        return None
    return response.content if isinstance(counted, dict) and isinstance(counted.get("input_tokens"), int) else None


ANTHROPIC = AnthropicProtocol()
