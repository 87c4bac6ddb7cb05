"""What every wire format the gateway speaks provides: the `Protocol` and its `StreamReader`.

A protocol is the only place that knows a wire's shapes: it reads a request into our message format (with the
extra tokens the provider counts besides the messages: tool schemas, the reserved output), renders errors in
the wire's JSON, builds the upstream request (the agent's bytes in observe mode, a fitted view rebuilt in the
wire's shape in manage mode), and reads the answer, whole or streamed. Everything else (threading, routing,
the fit, overflow recovery, records, live events) is the same code for every wire.
"""
from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from flows.engine import RequestTokens, request_tokens
from flows.gateway.wire import GatewayError, WireRequest, with_model
from flows.models import GatewayCall, ProviderConfig

__all__ = ["ExtraTokens", "StreamResult", "StreamReader", "Protocol", "tools_and_reserve"]

Msg = dict[str, Any]


@dataclass(frozen=True)
class ExtraTokens:
    """What the provider counts against the window besides the messages: the tool schemas, and the output the
    request reserves (`max_tokens`; None when the request does not say). Protocol-neutral, so the fit makes room
    for them the same way whatever the wire."""

    tools: int = 0
    reserve: int | None = None


def tools_and_reserve(tools: Any, reserve: Any, *, model: str | None) -> ExtraTokens:
    """Tokens of tool schemas in Anthropic's shape (`name`, `description`, `input_schema`), counted as the Chat
    Completions function schema by the engine (so the same tools cost the same on every wire), and the reserve."""
    counted: RequestTokens = request_tokens({"messages": [], "tools": tools if isinstance(tools, list) else []},
                                            "anthropic", model=model)
    valid = isinstance(reserve, int) and not isinstance(reserve, bool) and reserve > 0
    return ExtraTokens(tools=counted.tools, reserve=reserve if valid else None)


@dataclass(frozen=True)
class StreamResult:
    """How a stream ended: the answer (our message) and usage when it completed, else `error` in words;
    `reported` is True when the upstream's own error event already told the agent."""

    answer: Msg | None
    usage: dict[str, Any] | None
    error: str = ""
    reported: bool = False
    overflow: str = ""  # the upstream's context-overflow error, reported in the stream before the agent saw any
    #                     of it (a Responses `response.failed`): the call compacts and retries, unseen


class StreamReader(ABC):
    """Feed the upstream's bytes as they arrive; get back the events to pass on, then the result."""

    @abstractmethod
    def feed(self, chunk: bytes) -> list[bytes]:
        """The whole events `chunk` completes, as they go to the agent (ValueError/KeyError/TypeError: garbage)."""

    @abstractmethod
    def text(self) -> str:
        """The answer's text so far (for the live page)."""

    @abstractmethod
    def result(self) -> StreamResult:
        """At the end of the stream."""

    def release(self) -> list[bytes]:
        """Events held back for a possible retry (see StreamResult.overflow), when none follows."""
        return []


class Protocol(ABC):
    """One wire format: the gateway's endpoint for it, the provider kind it forwards to, its shapes."""

    name: str  # "chat", "anthropic": shown in records and errors
    provider_kind: str  # the ProviderKind its requests go to

    @abstractmethod
    def api_key(self, headers: Mapping[str, str]) -> str | None:
        """Our API token as this wire's clients send it; None when absent."""

    @abstractmethod
    def parse(self, raw: bytes, headers: Mapping[str, str], query: str) -> WireRequest:
        """The request read into our messages (GatewayError 4xx on bad input, nothing written)."""

    @abstractmethod
    def extra_tokens(self, request: WireRequest) -> ExtraTokens:
        """What the provider counts besides the messages (see ExtraTokens)."""

    @abstractmethod
    def error_body(self, exc: GatewayError) -> bytes:
        """`exc` in this wire's error JSON (an upstream's own error body passes through as it came)."""

    @abstractmethod
    def rebuilt(self, request: WireRequest, model: str, messages: list[Msg], *, manage: bool) -> dict[str, Any]:
        """The upstream body for a fitted view (manage mode, or an overflow retry): the agent's body with its
        history replaced by `messages` in this wire's shape."""

    @abstractmethod
    def endpoint(self, provider: ProviderConfig, request: WireRequest) -> tuple[str, dict[str, str]]:
        """The upstream URL and headers for a request."""

    @abstractmethod
    def upstream_error(self, status: int, raw: bytes) -> GatewayError:
        """The upstream's error response as the agent gets it (its own JSON when it is this wire's)."""

    @abstractmethod
    def answer(self, raw: bytes) -> tuple[Msg, dict[str, Any] | None]:
        """A whole (non-streamed) answer as our message and its usage; GatewayError 502 when it is not one."""

    @abstractmethod
    def stream_reader(self, request: WireRequest, *, manage: bool) -> StreamReader:
        """A reader for one streamed answer."""

    def resolve(self, request: WireRequest, user: Any) -> WireRequest:
        """The request completed with what only its user's records hold (a Responses `previous_response_id`),
        after the token check and before threading; GatewayError on a reference the user may not follow."""
        return request

    def reply(self, request: WireRequest, raw: bytes) -> bytes:
        """A whole answer as the agent gets it (the upstream's bytes unless the wire renames ids)."""
        return raw

    def recorded(self, request: WireRequest, call: GatewayCall, answer: Msg | None) -> None:
        """In the transaction that closes the call's record: what the wire keeps besides it."""
        return None

    @abstractmethod
    def stream_error(self, message: str) -> bytes:
        """The event that tells the agent its stream broke."""

    def upstream_body(self, request: WireRequest, model: str, messages: list[Msg] | None, *,
                      manage: bool = False) -> bytes:
        """Bytes to send: the agent's own body when `messages` is None (observe), else the body rebuilt."""
        if messages is None and model == request.model:
            return request.raw
        if messages is None:  # observe, with our provider prefix taken off the model: splice, don't re-serialize
            spliced = with_model(request.raw, request.body["model"], model)
            if spliced is not None:
                return spliced
            return json.dumps({**request.body, "model": model}, ensure_ascii=False).encode("utf-8")
        return json.dumps(self.rebuilt(request, model, messages, manage=manage), ensure_ascii=False).encode("utf-8")
