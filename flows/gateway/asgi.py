"""The OpenAI-compatible endpoints (`/v1/`) under ASGI: a Django handler without the page middleware.

Sessions, CSRF, authentication, messages, the common and clickjacking middleware exist for pages. Under ASGI
Django runs every `process_request`/`process_response` of a MiddlewareMixin through `sync_to_async`, a thread
hop in and out each: about a dozen per request, a sizeable part of a gateway call's few milliseconds. The gateway
authenticates by bearer token and answers JSON or server-sent events, so its handler runs no middleware and sets
the security headers the page middleware would (`SECURITY_HEADERS`) itself. (`HTTPS=true` redirects pages to
https; an API client does not follow a redirected POST, so /v1/ is never redirected.)

It also serves a request without Django's per-request thread (`ThreadSensitiveContext`) and request signals:
the gateway's views run their ORM work in a pool of threads that keep their connections (flows/gateway/hops.py),
so the only receivers those signals have (closing the handling thread's database connections and caches) have
nothing to do here, and each would cost a thread hop.
"""
from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from django.core.exceptions import RequestAborted
from django.core.handlers.asgi import ASGIHandler, get_script_prefix
from django.core.handlers.exception import convert_exception_to_response
from django.http import HttpRequest, HttpResponseBase
from django.urls import set_script_prefix

from flows.gateway.hops import start_after_response, under_gateway_handler
from flows.gateway.sessions import URL_SESSION
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

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            raise ValueError(f"the gateway serves HTTP, not {scope['type']}")
        with under_gateway_handler() as after_response:
            try:
                await self.handle(scope, receive, send)
            finally:
                start_after_response(after_response)

    async def handle(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """Django's `ASGIHandler.handle` without the request signals (see the module docstring): the view
        races the client's disconnect, which cancels it (the gateway then cancels its upstream call)."""
        try:
            body_file = await self.read_body(receive)
        except RequestAborted:
            return
        try:
            set_script_prefix(get_script_prefix(scope))
            request, error_response = self.create_request(scope, body_file)
            if request is None:
                await self.send_response(error_response, send)
                error_response.close()
                return
            await self._serve(request, receive, send)
        finally:
            body_file.close()

    async def _serve(self, request: HttpRequest, receive: Any, send: Any) -> None:
        """Answer in this task while another listens for the client hanging up, which cancels this one (one
        task and no wait on both: each extra turn of the event loop is a measurable part of a gateway call)."""
        serving = asyncio.current_task()
        assert serving is not None
        hung_up = answered = False

        def on_disconnect(listener: asyncio.Task[None]) -> None:
            nonlocal hung_up
            if not answered and not listener.cancelled() and isinstance(listener.exception(), RequestAborted):
                hung_up = True
                serving.cancel()

        listener = asyncio.create_task(self._disconnected(receive))
        listener.add_done_callback(on_disconnect)
        try:
            response = await self.run_get_response(request)
            await self.send_response(response, send)
        except asyncio.CancelledError:
            if not hung_up:
                raise
            serving.uncancel()
            return  # the client went away: the view was cancelled (the gateway cancels its upstream call)
        finally:
            answered = True
            listener.cancel()
        response.close()  # resource closers only: no signal receiver has work on this thread

    @staticmethod
    async def _disconnected(receive: Any) -> None:
        while (await receive())["type"] != "http.disconnect":
            pass  # nothing else may come after the body; a server that sends more is ignored, not obeyed
        raise RequestAborted()

    async def get_response_async(self, request: HttpRequest) -> HttpResponseBase:
        response = await super().get_response_async(request)
        for name, value in SECURITY_HEADERS.items():
            response.headers.setdefault(name, value)
        return response


def by_path(pages: Asgi, gateway: Asgi) -> Asgi:
    """One ASGI app for HTTP: /v1/ (and /s/<session>/v1/) to the gateway handler, everything else to the
    pages' handler."""
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        path = scope.get("path", "")
        target = gateway if path.startswith(GATEWAY_PREFIX) or URL_SESSION.match(path) else pages
        await target(scope, receive, send)
    return app
