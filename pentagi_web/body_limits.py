"""How large a request body each route accepts, decided from the request line and headers alone.

A body is refused before any of it is buffered: from its Content-Length when it has one, and by counting while it
streams in when it is chunked. The same rule runs in two places, so it holds under any server:
`pentagi_web/daphne_limits.py` applies it inside Daphne's HTTP parser (under `manage.py run` and plain Daphne,
where Twisted would otherwise spool the whole body before the application sees a byte) and `BodyLimit`
applies it to the ASGI application (any other ASGI server, and a second line of defence under Daphne).

A request that carries no credential at all (no `Authorization`, no relay secret, no session cookie) cannot be
anyone's: its body is capped at `UNAUTHENTICATED_BODY_BYTES` whatever the route, so a stranger never gets more
than a small body read. The credential itself is checked later, by the view, before the body is parsed.
"""
from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

from django.conf import settings

__all__ = ["BodyLimit", "GATEWAY_MAX_BODY_BYTES", "PAGE_BODY_BYTES", "UNAUTHENTICATED_BODY_BYTES", "Refusal",
           "body_limit", "declared_length", "refusal"]

UNAUTHENTICATED_BODY_BYTES = 64 * 1024  # a login form is well under 1 KiB
PAGE_BODY_BYTES = 1024 * 1024  # page forms (settings, compaction, .env import) are a few KiB
GATEWAY_MAX_BODY_BYTES = 64 * 1024 * 1024  # the gateway's ceiling whatever MAX_REQUEST_BYTES says
GATEWAY_PREFIX = "/v1/"
API_PREFIX = "/api/"
IMPORT_PATHS = ("/api/import", "/flows/upload/")
CREDENTIAL_HEADERS = (b"authorization", b"x-relay-secret")

Headers = Iterable[tuple[bytes, bytes]]
Asgi = Callable[[dict[str, Any], Any, Any], Awaitable[None]]


def route_limit(path: str) -> int:
    """The documented body limit of the route `path` belongs to (docs/operations.md, "Limits")."""
    request_bytes = int(settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
    if path.startswith(GATEWAY_PREFIX):
        return min(request_bytes, GATEWAY_MAX_BODY_BYTES)
    if path.startswith(API_PREFIX) or path in IMPORT_PATHS or path.rstrip("/") + "/" in IMPORT_PATHS:
        return request_bytes
    return min(request_bytes, PAGE_BODY_BYTES)


def has_credential(headers: Headers) -> bool:
    """Whether the request carries something that could authenticate it (checked for real by the view)."""
    cookie_name = settings.SESSION_COOKIE_NAME.encode()
    for name, value in headers:
        lower = name.lower()
        if lower in CREDENTIAL_HEADERS and value.strip():
            return True
        if lower == b"cookie" and any(part.strip().startswith(cookie_name + b"=") for part in value.split(b";")):
            return True
    return False


def body_limit(path: str, headers: Headers) -> int:
    headers = list(headers)
    limit = route_limit(path)
    return limit if has_credential(headers) else min(limit, UNAUTHENTICATED_BODY_BYTES)


def declared_length(headers: Headers) -> int | None:
    """The Content-Length, or None when there is none (chunked) or it is not a number (the server refuses it)."""
    for name, value in headers:
        if name.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


@dataclass(frozen=True)
class Refusal:
    status: int
    content_type: bytes
    body: bytes


def refusal(path: str, limit: int) -> Refusal:
    """A 413 in the route's own error format: OpenAI (or Anthropic) JSON on the gateway, ours on the API."""
    body: dict[str, Any]
    message = f"request body over {limit} bytes (this route's limit; see docs/operations.md, Limits)"
    if path.startswith(GATEWAY_PREFIX + "messages"):
        body = {"type": "error", "error": {"type": "request_too_large", "message": message}}
    elif path.startswith(GATEWAY_PREFIX):
        body = {"error": {"message": message, "type": "invalid_request_error", "code": "request_too_large",
                          "param": None}}
    elif path.startswith(API_PREFIX):
        body = {"error": "payload_too_large", "detail": message, "limit_bytes": limit}
    else:
        return Refusal(413, b"text/plain; charset=utf-8", message.encode())
    return Refusal(413, b"application/json", json.dumps(body).encode())


class BodyLimit:
    """ASGI middleware: a body over its route's limit gets the 413 and never reaches the application."""

    def __init__(self, app: Asgi) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        limit = body_limit(path, scope.get("headers", []))
        length = declared_length(scope.get("headers", []))
        if length is not None and length > limit:
            await _send_refusal(send, refusal(path, limit))
            return
        counted = 0
        over = False

        async def limited_receive() -> dict[str, Any]:
            nonlocal counted, over
            if over:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                counted += len(message.get("body", b""))
                if counted > limit:
                    over = True  # the application sees a client that hung up: it reads no more and answers nothing
                    return {"type": "http.disconnect"}
            return message

        await self.app(scope, limited_receive, send)
        if over:
            await _send_refusal(send, refusal(path, limit))


async def _send_refusal(send: Any, answer: Refusal) -> None:
    await send({"type": "http.response.start", "status": answer.status, "headers": [
        (b"content-type", answer.content_type), (b"content-length", str(len(answer.body)).encode()),
        (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": answer.body})
