"""The OpenAI-compatible endpoints (`/v1/`) under ASGI: a Django handler without the page middleware.

Sessions, CSRF, authentication, messages, the common and clickjacking middleware exist for pages. Under ASGI
Django runs every `process_request`/`process_response` of a MiddlewareMixin through `sync_to_async`, a thread
hop in and out each: about a dozen per request, a sizeable part of a gateway call's few milliseconds. The gateway
authenticates by bearer token and answers JSON or server-sent events, so its handler runs no middleware and sets
the security headers the page middleware would (`SECURITY_HEADERS`) itself. (`HTTPS=true` redirects pages to
https; an API client does not follow a redirected POST, so /v1/ is never redirected.)
"""
from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from django.core.handlers.asgi import ASGIHandler
from django.core.handlers.exception import convert_exception_to_response
from django.http import HttpRequest, HttpResponseBase

from pentagi_web.security import CONTENT_SECURITY_POLICY

__all__ = ["GATEWAY_PREFIX", "SECURITY_HEADERS", "GatewayHandler", "by_path"]

GATEWAY_PREFIX = "/v1/"
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
}

Asgi = Callable[[dict[str, Any], Any, Any], Awaitable[None]]


class GatewayHandler(ASGIHandler):
    """Django's ASGI handler with an empty middleware chain (URL resolution, views and error pages as usual)."""

    def load_middleware(self, is_async: bool = False) -> None:
        self._view_middleware: list[Any] = []
        self._template_response_middleware: list[Any] = []
        self._exception_middleware: list[Any] = []
        self._middleware_chain = convert_exception_to_response(
            self._get_response_async if is_async else self._get_response)

    async def get_response_async(self, request: HttpRequest) -> HttpResponseBase:
        response = await super().get_response_async(request)
        for name, value in SECURITY_HEADERS.items():
            response.headers.setdefault(name, value)
        return response


def by_path(pages: Asgi, gateway: Asgi) -> Asgi:
    """One ASGI app for HTTP: /v1/ to the gateway handler, everything else to the pages' handler."""
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        target = gateway if scope.get("path", "").startswith(GATEWAY_PREFIX) else pages
        await target(scope, receive, send)
    return app
