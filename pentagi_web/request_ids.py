"""One id per request, in every log line written while it is served and in its `X-Request-Id` response header.

An incoming `X-Request-Id` (from a proxy) is kept when it is short and plain, so a line in the proxy's log and one
in ours can be matched; otherwise a fresh id is made. The id lives in a context variable: Django's thread hops
(`sync_to_async`) copy the context, so a view's worker thread logs the same id as the event loop.
"""
from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any

__all__ = ["HEADER", "RequestIdFilter", "RequestIds", "current_request_id"]

HEADER = b"x-request-id"
NO_REQUEST = "-"
_PLAIN = re.compile(rb"[A-Za-z0-9._:-]{1,64}")
_current: ContextVar[str] = ContextVar("request_id", default=NO_REQUEST)

Asgi = Callable[[dict[str, Any], Any, Any], Awaitable[None]]


def current_request_id() -> str:
    """The id of the request being served in this context, or "-" outside any request."""
    return _current.get()


class RequestIdFilter(logging.Filter):
    """Gives every record a `request_id` attribute for the log format."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = _current.get()
        return True


def _incoming(headers: list[tuple[bytes, bytes]]) -> str | None:
    for name, value in headers:
        if name.lower() == HEADER and _PLAIN.fullmatch(value):
            return value.decode("ascii")
    return None


class RequestIds:
    """ASGI middleware: sets the request's id for its whole handling and adds the response header."""

    def __init__(self, app: Asgi) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        request_id = _incoming(scope.get("headers", [])) or uuid.uuid4().hex
        token = _current.set(request_id)

        async def send_with_id(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != HEADER]
                message = {**message, "headers": [*headers, (HEADER, request_id.encode())]}
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            _current.reset(token)
