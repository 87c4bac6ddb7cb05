"""The per-user cap on live sockets: past it a new socket is closed with 4429; other users are unaffected and
closing a socket frees its slot."""
from __future__ import annotations

import pytest
import pytest_asyncio
from asgiref.sync import sync_to_async
from django.db import connections

from flows.live import limits as ws_limits
from tests.flows.test_consumers import _communicator, _make_chain, _session_cookie

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]
CAP = 3


@pytest_asyncio.fixture(autouse=True)
async def _close_worker_connections():
    yield
    await sync_to_async(connections.close_all)()


async def _open(chain_id: int, cookie: bytes):
    """(socket, connected, close code): a socket past the cap is accepted, then closed with 4429 at once (a
    browser sees the code only after the handshake; a refused handshake reads as 1006)."""
    ws = await _communicator(chain_id, cookie)
    connected, code = await ws.connect()
    if connected:
        frame = await ws.receive_output()
        if frame["type"] == "websocket.close":
            return ws, False, frame["code"]
    return ws, connected, code


async def test_a_user_past_the_cap_is_refused_until_a_socket_closes(monkeypatch):
    monkeypatch.setattr(ws_limits, "MAX_SOCKETS_PER_USER", CAP)
    alice, chain = await sync_to_async(_make_chain)("alice")
    bob, bobs_chain = await sync_to_async(_make_chain)("bob")
    cookie = await sync_to_async(_session_cookie)(alice)
    sockets = [await _open(chain.pk, cookie) for _ in range(CAP)]
    assert all(connected for _, connected, _ in sockets)
    _, connected, code = await _open(chain.pk, cookie)
    assert (connected, code) == (False, ws_limits.CLOSE_TOO_MANY)
    bobs, connected, _ = await _open(bobs_chain.pk, await sync_to_async(_session_cookie)(bob))
    assert connected
    await sockets[0][0].disconnect()
    again, connected, _ = await _open(chain.pk, cookie)
    assert connected and ws_limits.sockets_open(alice.pk) == CAP
    for ws in [again, bobs, *(s for s, _, _ in sockets[1:])]:
        await ws.disconnect()
    assert ws_limits.sockets_open(alice.pk) == 0 and ws_limits.sockets_open(bob.pk) == 0
