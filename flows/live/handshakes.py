"""A bound on the WebSocket handshakes one server process works on at once (WS_HANDSHAKES_IN_FLIGHT, default 16).

Every tab reconnects when a server restarts. Each handshake reads the session and the user, then the consumer
checks the chain, in database hops that run one after another; Daphne drops a handshake the application has not
answered within its handshake timeout (5 s) with no HTTP answer at all, so under load a burst of 50 lost a third
of them, each an anonymous failure for the page. Past the bound a new socket is accepted and at once closed with
4503 (reconnect) before any database work: the page backs off with jitter and comes back, and the handshakes let
in finish in time. Counted from `websocket.connect` until the application accepts, closes or returns.
"""
from __future__ import annotations

import os
from typing import Any

from flows.live.sessions import CLOSE_RECONNECT

__all__ = ["HANDSHAKES_IN_FLIGHT", "HandshakeGate"]

HANDSHAKES_IN_FLIGHT = int(os.environ.get("WS_HANDSHAKES_IN_FLIGHT", 16))

Asgi = Any


class HandshakeGate:
    """ASGI middleware for the websocket protocol; one per process, on the event loop (no lock needed)."""

    def __init__(self, app: Asgi, limit: int | None = None) -> None:
        self.app = app
        self.limit = HANDSHAKES_IN_FLIGHT if limit is None else limit
        self.in_flight = 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return
        if self.in_flight >= self.limit:
            await self._turn_away(receive, send)
            return
        self.in_flight += 1
        pending = True

        def done() -> None:
            nonlocal pending
            if pending:
                pending = False
                self.in_flight -= 1

        async def watched_send(message: dict[str, Any]) -> None:
            if message.get("type") in ("websocket.accept", "websocket.close"):
                done()
            await send(message)

        try:
            await self.app(scope, receive, watched_send)
        finally:
            done()

    @staticmethod
    async def _turn_away(receive: Any, send: Any) -> None:
        """Accept, then close with 4503: a refused handshake reaches a browser as a bare 1006, a close code
        after an accept tells the page to come back later."""
        message = await receive()
        if message.get("type") != "websocket.connect":
            return
        await send({"type": "websocket.accept"})
        await send({"type": "websocket.close", "code": CLOSE_RECONNECT})
