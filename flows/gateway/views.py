"""The ASGI endpoints: `POST /v1/chat/completions`, `POST /v1/messages` (+ `/count_tokens`) and `GET /v1/models`
(async views; ORM work in one thread hop; each wire's shapes are its protocol's)."""
from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.views.decorators.csrf import csrf_exempt

from flows.config import model_window_for, provider_for, provider_of_kind, split_model_ref
from flows.engine import request_tokens
from flows.gateway import calls, hops, upstream
from flows.gateway.admission import PreparedCall, authenticate_bearer, authenticate_key, chain_headers, prepare_call
from flows.gateway.protocols import ANTHROPIC, CHAT, RESPONSES, Protocol, parse_messages_request, upstream_count_tokens
from flows.gateway.records import gateway_call_fail
from flows.gateway.sessions import call_headers
from flows.gateway.wire import GatewayError, WireRequest
from flows.models import CallStatus, ProviderConfig, ProviderKind

__all__ = ["chat_completions", "messages", "count_tokens", "responses", "model_call", "models", "unknown"]

JSON = "application/json"


def _error(exc: GatewayError, protocol: Protocol = CHAT) -> HttpResponse:
    response = HttpResponse(protocol.error_body(exc), status=exc.status, content_type=JSON)
    for key, value in exc.headers.items():
        response[key] = value
    return response


def _method_not_allowed(allowed: str, protocol: Protocol = CHAT) -> HttpResponse:
    exc = GatewayError(405, f"use {allowed}", code="method_not_allowed")
    response = _error(exc, protocol)
    response["Allow"] = allowed
    return response


@csrf_exempt
async def chat_completions(request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
    return await model_call(request, CHAT)


@csrf_exempt
async def messages(request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
    """Anthropic's Messages API: `POST /v1/messages`."""
    return await model_call(request, ANTHROPIC)


@csrf_exempt
async def count_tokens(request: HttpRequest) -> HttpResponse:
    """`POST /v1/messages/count_tokens`: the Anthropic upstream's own count when it has the endpoint, else ours,
    labelled an estimate (`"estimate": true`, header X-Token-Count: estimate)."""
    if request.method != "POST":
        return _method_not_allowed("POST", ANTHROPIC)
    try:
        headers = dict(request.headers)
        body, provider, model = await hops.run(_count_admit, headers, _body(request))
        if provider is not None:
            counted = await upstream_count_tokens(provider, {**body, "model": model}, headers,
                                                  request.META.get("QUERY_STRING", ""))
            if counted is not None:
                return HttpResponse(counted, content_type=JSON)
        estimate = await hops.run(request_tokens, body, "anthropic", model=model or None)
    except GatewayError as exc:
        return _error(exc, ANTHROPIC)
    response = HttpResponse(json.dumps({"input_tokens": estimate.prompt, "estimate": True}), content_type=JSON)
    response["X-Token-Count"] = "estimate"
    return response


def _count_admit(headers: dict[str, str], body: bytes | None) -> tuple[dict[str, Any], ProviderConfig | None, str]:
    """The caller checked, the body parsed, and the Anthropic provider its model routes to (if any)."""
    authenticate_key(ANTHROPIC.api_key(headers))
    if body is None:
        raise GatewayError(413, "request body over the server's MAX_REQUEST_BYTES", code="request_too_large")
    parsed, _messages = parse_messages_request(body)
    named, model = split_model_ref(str(parsed["model"]))
    provider = named if named is not None else provider_of_kind(ANTHROPIC.provider_kind)
    return parsed, provider if provider is not None and provider.kind == ANTHROPIC.provider_kind else None, model


@csrf_exempt
async def responses(request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
    """`POST /v1/responses`: OpenAI's Responses API (our response ids: gateway/response_store.py)."""
    return await model_call(request, RESPONSES)


async def model_call(request: HttpRequest, protocol: Protocol) -> HttpResponse | StreamingHttpResponse:
    """One model call in `protocol`'s wire format: admitted in one thread hop, forwarded, answered."""
    if request.method != "POST":
        return _method_not_allowed("POST", protocol)
    started = time.monotonic()
    headers = call_headers(request)  # with a /s/<session>/v1/ URL's session as its X-Session-Id
    await calls.settled(protocol.api_key(headers) or "")  # this agent's previous answer is in its chain
    waited = time.monotonic()
    admission = asyncio.ensure_future(hops.run(_admit, protocol, headers, _body(request),
                                               request.META.get("QUERY_STRING", "")))
    try:
        wire, prepared = await asyncio.shield(admission)  # a hang-up must not orphan the call row it writes
    except GatewayError as exc:
        return _error(exc, protocol)
    except asyncio.CancelledError:
        admission.add_done_callback(_hung_up_during_admission)
        raise
    prepared.call.phases = {"wait_ms": int((waited - started) * 1000),  # saved with the finished record
                            "admitted_at_ms": int((time.monotonic() - started) * 1000)}
    ids = chain_headers(prepared.chain)
    try:
        if not wire.stream:
            body = await calls.complete(wire, prepared, started)
            return _with_headers(HttpResponse(body, content_type=JSON), ids)
        deadline = asyncio.get_running_loop().time() + prepared.provider.timeout_seconds
        response = await calls.open_upstream(wire, prepared, deadline)
    except GatewayError as exc:
        await _failed(prepared, started, exc)
        exc.headers = ids
        return _error(exc, protocol)
    except asyncio.CancelledError:
        await calls.finish(prepared, started, status=CallStatus.CANCELLED, http_status=499,
                           error="the agent hung up before the answer")
        raise
    stream = StreamingHttpResponse(calls.stream_events(wire, prepared, response, started, deadline),
                                   content_type="text/event-stream")
    stream["Cache-Control"] = "no-cache"
    stream["X-Accel-Buffering"] = "no"
    return _with_headers(stream, ids)


def _body(request: HttpRequest) -> bytes | None:
    """The request body, or None when it is over Django's limit (MAX_REQUEST_BYTES)."""
    try:
        return request.body
    except RequestDataTooBig:
        return None


def _admit(protocol: Protocol, headers: dict[str, str], body: bytes | None,
           query: str) -> tuple[WireRequest, PreparedCall]:
    """Authenticate, parse, thread and prepare in one thread hop; the token is checked before the body is
    even parsed, so strangers learn nothing about it."""
    user = authenticate_key(protocol.api_key(headers))
    if body is None:
        raise GatewayError(413, f"request body over {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes (the server's "
                                "MAX_REQUEST_BYTES)", code="request_too_large")
    wire = protocol.resolve(protocol.parse(body, headers, query), user)
    return wire, prepare_call(user, headers, wire, protocol)


def _with_headers(response: Any, headers: dict[str, str]) -> Any:
    for key, value in headers.items():
        response[key] = value
    return response


_closing: set[asyncio.Future[Any]] = set()  # closes of calls whose agent hung up during admission
HUNG_UP_ADMITTING = "the agent hung up while its call was being admitted"


def _hung_up_during_admission(admission: asyncio.Future[tuple[WireRequest, PreparedCall]]) -> None:
    """The agent went away while the admission's thread hop ran on: the call row it made ends cancelled."""
    if admission.cancelled() or admission.exception() is not None:
        return
    call_id = admission.result()[1].call.pk
    closing = asyncio.ensure_future(hops.run(gateway_call_fail, call_id, HUNG_UP_ADMITTING,
                                             status=CallStatus.CANCELLED, http_status=499))
    _closing.add(closing)
    closing.add_done_callback(_closing.discard)


async def _failed(prepared: PreparedCall, started: float, exc: GatewayError) -> None:
    status = CallStatus.UPSTREAM_ERROR if exc.type == "upstream_error" else CallStatus.FAILED
    await calls.finish(prepared, started, status=status, http_status=exc.status, error=exc.message)


def _providers() -> list[ProviderConfig]:
    return [p for p in ProviderConfig.objects.filter(kind=ProviderKind.OPENAI).order_by("-is_default", "name")]


def _window(model: str, provider: ProviderConfig) -> int | None:
    return model_window_for(model=model, provider=provider, discover=False)[0]


@csrf_exempt
async def models(request: HttpRequest) -> HttpResponse:
    """The upstream models with the window we know; a non-default provider's models carry its name as prefix."""
    if request.method != "GET":
        return _method_not_allowed("GET")
    try:
        await hops.run(authenticate_bearer, dict(request.headers))
        providers = await hops.run(_default_first)
        data: list[dict[str, Any]] = []
        for index, provider in enumerate(providers):
            try:
                listed = await upstream.list_models(provider)
            except GatewayError:
                if index == 0:
                    raise
                continue  # another provider being down must not hide the default's models
            for item in listed:
                window = await hops.run(_window, item["id"], provider)
                prefix = "" if index == 0 else provider.name + "/"
                data.append({**item, "id": prefix + item["id"], "context_window": window})
    except GatewayError as exc:
        return _error(exc)
    return HttpResponse(json.dumps({"object": "list", "data": data}), content_type=JSON)


def _default_first() -> list[ProviderConfig]:
    default = provider_for()
    rest = [p for p in _providers() if default is None or p.pk != default.pk]
    head = [default] if default is not None and default.kind == ProviderKind.OPENAI else []
    if not head and not rest:
        raise GatewayError(503, "no upstream model endpoint is configured", type_="server_error", code="no_upstream")
    return head + rest


@csrf_exempt
async def unknown(request: HttpRequest, rest: str) -> HttpResponse:
    """Any other /v1/ path: an OpenAI-style 404 an SDK can show."""
    return _error(GatewayError(404, "the gateway serves /v1/chat/completions, /v1/messages, "
                                    "/v1/messages/count_tokens, /v1/responses and /v1/models, not "
                                    f"/v1/{rest[:100]}", code="unknown_url"))
