"""An agent's API calls under ASGI: Django without the page middleware, as the gateway is served.

An agent appends a turn, reads its chain and catches up by seq over and over with its bearer token. Through
the page stack each such request made about seventeen thread hops (every MiddlewareMixin method is one under
ASGI, plus the request signals), a new thread and a new database connection. Sessions, CSRF, messages and the
other page middleware have nothing to do for a bearer request (the API authenticates it itself and never falls
back to the session: flows/api/auth.py), so those requests go to `ApiHandler`: the gateway's handler (no
middleware, no request signals, the security headers set by the handler), with the views' ORM work in the
connection-keeping threads of `flows.core.db_threads`: one hop per request. (`HTTPS=true` redirects pages to
https; an API client does not follow a redirected POST, so these requests are never redirected, like /v1/.)

Only the agent's loop is routed here (`POOLED_PATH`): a long import or preview keeps the page stack and its
own thread, so it never holds one of the few pooled threads. Requests with a session (the browser) keep the
full stack, CSRF check included.
"""
from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any

from flows.core import pooled_db_threads
from flows.gateway import GatewayHandler
from flows.ingest import bearer_value

__all__ = ["ApiHandler", "POOLED_PATH", "bearer_api"]

POOLED_PATH = re.compile(r"^/api/chains/\d{1,18}(?:/messages)?/?$")

Asgi = Callable[[dict[str, Any], Any, Any], Awaitable[None]]


class ApiHandler(GatewayHandler):
    """The gateway's middleware-free handler, with the API views' ORM work in `flows.core.db_threads`."""

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        with pooled_db_threads():
            await super().__call__(scope, receive, send)


def _bearer(scope: dict[str, Any]) -> bool:
    for name, value in scope.get("headers") or ():
        if name.lower() == b"authorization":
            return bearer_value(value.decode("latin-1")) is not None
    return False


def bearer_api(pages: Asgi, api: Asgi) -> Asgi:
    """One ASGI app for HTTP: an agent's bearer-token calls of `POOLED_PATH` to `api`, the rest to `pages`."""
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        target = api if POOLED_PATH.match(scope.get("path", "")) and _bearer(scope) else pages
        await target(scope, receive, send)
    return app
