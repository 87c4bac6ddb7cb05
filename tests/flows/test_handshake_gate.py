"""Issue 26 item 8: past WS_HANDSHAKES_IN_FLIGHT a new socket is accepted and closed with 4503 at once, before the
application (and its database reads) sees it; a slot frees when a handshake is answered or its app returns."""
from __future__ import annotations

import asyncio
from typing import Any

import pytest

from flows.live import CLOSE_RECONNECT, HandshakeGate

pytestmark = pytest.mark.asyncio


class _SlowApp:
    """Answers each handshake only when told to: handshakes stay in flight as long as the test wants."""

    def __init__(self) -> None:
        self.seen = 0
        self.answer = asyncio.Event()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        self.seen += 1
        await receive()
        await self.answer.wait()
        await send({"type": "websocket.accept"})


def _socket(gate: HandshakeGate) -> tuple[asyncio.Task[None], list[dict[str, Any]]]:
    sent: list[dict[str, Any]] = []
    inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    inbox.put_nowait({"type": "websocket.connect"})

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    return asyncio.create_task(gate({"type": "websocket"}, inbox.get, send)), sent


async def _until(condition: Any) -> None:
    while not condition():
        await asyncio.sleep(0)


async def test_a_handshake_past_the_bound_is_told_to_reconnect_before_the_app_sees_it() -> None:
    app = _SlowApp()
    gate = HandshakeGate(app, limit=2)
    held = [_socket(gate) for _ in range(2)]
    await _until(lambda: app.seen == 2)
    turned_away, sent = _socket(gate)
    await turned_away
    assert sent == [{"type": "websocket.accept"}, {"type": "websocket.close", "code": CLOSE_RECONNECT}]
    assert app.seen == 2 and gate.in_flight == 2

    app.answer.set()  # the held handshakes are answered: their slots free, a new socket reaches the app
    await asyncio.gather(*(task for task, _ in held))
    assert gate.in_flight == 0 and all(s == [{"type": "websocket.accept"}] for _, s in held)
    admitted, sent = _socket(gate)
    await admitted
    assert app.seen == 3 and sent == [{"type": "websocket.accept"}]


async def test_an_app_that_fails_mid_handshake_frees_its_slot() -> None:
    async def broken(scope: dict[str, Any], receive: Any, send: Any) -> None:
        raise RuntimeError("boom")

    gate = HandshakeGate(broken, limit=1)
    task, _ = _socket(gate)
    with pytest.raises(RuntimeError):
        await task
    assert gate.in_flight == 0


async def test_http_passes_through_uncounted() -> None:
    calls: list[str] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        calls.append(scope["type"])

    gate = HandshakeGate(app, limit=0)
    await gate({"type": "http"}, None, None)
    assert calls == ["http"] and gate.in_flight == 0
