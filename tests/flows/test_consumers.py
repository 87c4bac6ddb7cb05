"""The chain WebSocket: only an authenticated user who may see the chain joins; it only forwards events."""
from __future__ import annotations

import asyncio
import threading

import pytest
import pytest_asyncio
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model
from django.db import connections
from django.test import Client

from flows.core import bind_event_loop, broadcast
from flows.models import Agent, Chain, Flow, SummaryEvent
from pentagi_web.asgi import application

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


@pytest_asyncio.fixture(autouse=True)
async def _close_worker_connections():
    """The ORM ran in asgiref's worker thread; close its connection so the test database can be dropped."""
    yield
    await sync_to_async(connections.close_all)()


def _make_chain(username: str) -> tuple[object, Chain]:
    user = get_user_model().objects.create_user(username=username, password="pw-for-tests-only")
    flow = Flow.objects.create(title="scan", owner=user)
    agent = Agent.objects.create(flow=flow, agent_type="pentester")
    return user, Chain.objects.create(agent=agent)


def _session_cookie(user) -> bytes:
    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}".encode()


async def _communicator(chain_id: int, cookie: bytes | None = None, origin: bytes = b"http://localhost",
                        host: bytes = b"localhost"):
    headers = [(b"origin", origin), (b"host", host)]
    if cookie:
        headers.append((b"cookie", cookie))
    return WebsocketCommunicator(application, f"/ws/chains/{chain_id}/", headers=headers)


async def test_it_refuses_an_anonymous_visitor():
    _, chain = await sync_to_async(_make_chain)("alice")
    ws = await _communicator(chain.pk)
    connected, code = await ws.connect()
    assert not connected
    assert code == 4401


async def test_it_refuses_a_user_who_may_not_see_the_chain():
    _, chain = await sync_to_async(_make_chain)("alice")
    mallory, _ = await sync_to_async(_make_chain)("mallory")
    ws = await _communicator(chain.pk, await sync_to_async(_session_cookie)(mallory))
    connected, code = await ws.connect()
    assert not connected
    assert code == 4404


async def test_it_refuses_a_foreign_origin():
    user, chain = await sync_to_async(_make_chain)("alice")
    ws = await _communicator(chain.pk, await sync_to_async(_session_cookie)(user), origin=b"http://evil.example")
    connected, _ = await ws.connect()
    assert not connected


@pytest.mark.parametrize("origin", [b"http://localhost:9999", b"https://localhost", b"http://localhost:8000",
                                    b"http://localhost.evil.example", b"null", b""])
async def test_it_refuses_an_origin_whose_scheme_or_port_differs(origin):
    """Cross-site WebSocket hijacking: another port or scheme of the same host is another site."""
    user, chain = await sync_to_async(_make_chain)("alice")
    ws = await _communicator(chain.pk, await sync_to_async(_session_cookie)(user), origin=origin)
    connected, _ = await ws.connect()
    assert not connected


@pytest.mark.parametrize("origin,host", [(b"http://localhost:8000", b"localhost:8000"),
                                         (b"http://127.0.0.1:8000", b"127.0.0.1:8000"),
                                         (b"http://LOCALHOST:80", b"localhost")])
async def test_it_accepts_the_exact_origin_of_the_page(origin, host):
    user, chain = await sync_to_async(_make_chain)("alice")
    ws = await _communicator(chain.pk, await sync_to_async(_session_cookie)(user), origin=origin, host=host)
    connected, _ = await ws.connect()
    assert connected
    await ws.disconnect()


async def test_a_trusted_origin_is_accepted_and_its_other_ports_are_not(settings):
    settings.CSRF_TRUSTED_ORIGINS = ["https://dash.example.com", "https://*.lab.example"]
    user, chain = await sync_to_async(_make_chain)("alice")
    cookie = await sync_to_async(_session_cookie)(user)
    for origin, expected in [(b"https://dash.example.com", True), (b"https://dash.example.com:8443", False),
                             (b"http://dash.example.com", False), (b"https://a.lab.example", True)]:
        ws = await _communicator(chain.pk, cookie, origin=origin)
        connected, _ = await ws.connect()
        assert connected is expected, origin
        if connected:
            await ws.disconnect()


async def test_the_owner_receives_events_broadcast_for_the_chain():
    user, chain = await sync_to_async(_make_chain)("alice")
    ws = await _communicator(chain.pk, await sync_to_async(_session_cookie)(user))
    connected, _ = await ws.connect()
    assert connected
    assert await ws.receive_json_from(timeout=2) == {"type": "hello", "chain_id": chain.pk}
    await sync_to_async(broadcast)(chain.pk, {
        "type": "view.updated", "chain_id": chain.pk, "version": 3, "raw_seq_to": 7,
        "byte_size": 120, "token_count": 40, "messages": 5,
    })
    frame = await ws.receive_json_from(timeout=2)
    assert frame["type"] == "view.updated"
    assert frame["version"] == 3
    await ws.disconnect()


async def test_it_does_not_forward_events_of_other_chains():
    user, chain = await sync_to_async(_make_chain)("alice")
    _, other = await sync_to_async(_make_chain)("bob")
    ws = await _communicator(chain.pk, await sync_to_async(_session_cookie)(user))
    await ws.connect()
    await ws.receive_json_from(timeout=2)
    await sync_to_async(broadcast)(other.pk, {
        "type": "compaction.started", "chain_id": other.pk, "event_id": 1, "trigger": "manual"})
    assert await ws.receive_nothing(timeout=0.3)
    await ws.disconnect()


async def test_client_frames_are_ignored_and_write_nothing():
    user, chain = await sync_to_async(_make_chain)("alice")
    ws = await _communicator(chain.pk, await sync_to_async(_session_cookie)(user))
    await ws.connect()
    await ws.receive_json_from(timeout=2)
    await ws.send_json_to({"type": "compaction.started", "chain_id": chain.pk, "event_id": 1, "trigger": "manual"})
    assert await ws.receive_nothing(timeout=0.3)
    assert await sync_to_async(SummaryEvent.objects.count)() == 0
    await ws.disconnect()


async def test_a_worker_thread_broadcast_reaches_the_socket_through_the_bound_loop():
    """The embedded run command binds Daphne's loop so worker-thread events reach the in-memory layer."""
    user, chain = await sync_to_async(_make_chain)("alice")
    ws = await _communicator(chain.pk, await sync_to_async(_session_cookie)(user))
    await ws.connect()
    await ws.receive_json_from(timeout=2)
    event = {"type": "compaction.failed", "chain_id": chain.pk, "event_id": 9, "trigger": "manual",
             "reason": "endpoint down"}
    bind_event_loop(asyncio.get_running_loop())
    try:
        worker = threading.Thread(target=broadcast, args=(chain.pk, event))
        worker.start()
        frame = await ws.receive_json_from(timeout=2)
        await asyncio.get_running_loop().run_in_executor(None, worker.join)
    finally:
        bind_event_loop(None)
    assert frame == event
    await ws.disconnect()


def _appended(chain_id: int, seq: int) -> dict:
    return {"type": "message.appended", "chain_id": chain_id, "last_seq": seq,
            "messages": [{"role": "user", "content": f"m{seq}", "seq": seq, "byte_size": 3, "token_count": 1}]}


async def _owner_watching() -> tuple[Chain, WebsocketCommunicator]:
    """alice's new chain and her connected socket, past its hello frame."""
    user, chain = await sync_to_async(_make_chain)("alice")
    ws = await _communicator(chain.pk, await sync_to_async(_session_cookie)(user))
    await ws.connect()
    await ws.receive_json_from(timeout=2)
    return chain, ws


async def test_a_burst_of_appends_becomes_one_appended_up_to_frame(settings):
    settings.LIVE_COALESCE_SECONDS = 0.3
    chain, ws = await _owner_watching()
    for seq in range(1, 31):
        await sync_to_async(broadcast)(chain.pk, _appended(chain.pk, seq))
    first = await ws.receive_json_from(timeout=2)
    assert first["type"] == "message.appended" and first["last_seq"] == 1  # the leading append is not delayed
    burst = await ws.receive_json_from(timeout=2)
    assert (burst["type"], burst["first_seq"], burst["last_seq"]) == ("message.appended_up_to", 2, 30)
    assert [m["seq"] for m in burst["messages"]] == list(range(2, 31))
    assert await ws.receive_nothing(timeout=0.5)


async def test_a_burst_with_a_gap_carries_only_its_seq_range(settings):
    settings.LIVE_COALESCE_SECONDS = 0.3
    chain, ws = await _owner_watching()
    for seq in (1, 2, 3, 5):  # seq 4's event never reached this consumer
        await sync_to_async(broadcast)(chain.pk, _appended(chain.pk, seq))
    await ws.receive_json_from(timeout=2)
    burst = await ws.receive_json_from(timeout=2)
    assert (burst["first_seq"], burst["last_seq"], burst["messages"]) == (2, 5, [])
    await ws.disconnect()


async def test_a_pending_burst_is_sent_before_the_view_that_covers_it(settings):
    settings.LIVE_COALESCE_SECONDS = 5
    chain, ws = await _owner_watching()
    for seq in (1, 2, 3):
        await sync_to_async(broadcast)(chain.pk, _appended(chain.pk, seq))
    await sync_to_async(broadcast)(chain.pk, {"type": "view.updated", "chain_id": chain.pk, "version": 1,
                                              "raw_seq_to": 3, "byte_size": 9, "token_count": 3, "messages": 3})
    types = [(await ws.receive_json_from(timeout=2))["type"] for _ in range(3)]
    assert types == ["message.appended", "message.appended_up_to", "view.updated"]
    await ws.disconnect()


async def test_the_heartbeat_carries_the_stored_last_seq_without_any_broadcast(settings):
    settings.LIVE_HEARTBEAT_SECONDS = 0.2
    user, chain = await sync_to_async(_make_chain)("alice")
    await sync_to_async(Chain.objects.filter(pk=chain.pk).update)(last_seq=42)
    ws = await _communicator(chain.pk, await sync_to_async(_session_cookie)(user))
    await ws.connect()
    await ws.receive_json_from(timeout=2)
    assert await ws.receive_json_from(timeout=2) == {"type": "heartbeat", "chain_id": chain.pk, "last_seq": 42}
    await ws.disconnect()
