"""The flow page's one socket: every chain of the flow on one connection, one slot of the user's cap."""
from __future__ import annotations

import pytest
import pytest_asyncio
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.db import connections

from flows.core import broadcast
from flows.live import limits as ws_limits
from flows.models import Agent, Chain
from pentagi_web.asgi import application
from tests.flows.test_consumers import _make_chain, _session_cookie

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


@pytest_asyncio.fixture(autouse=True)
async def _close_worker_connections():
    yield
    await sync_to_async(connections.close_all)()


def _second_chain(chain: Chain) -> Chain:
    agent = Agent.objects.create(flow=chain.agent.flow, agent_type="searcher")
    return Chain.objects.create(agent=agent)


async def _flow_socket(flow_id: int, cookie: bytes | None) -> WebsocketCommunicator:
    headers = [(b"origin", b"http://localhost"), (b"host", b"localhost")] + ([(b"cookie", cookie)] if cookie else [])
    return WebsocketCommunicator(application, f"/ws/flows/{flow_id}/", headers=headers)


def _view_updated(chain_id: int) -> dict[str, object]:
    return {"type": "view.updated", "chain_id": chain_id, "version": 2, "raw_seq_to": 4, "byte_size": 10,
            "token_count": 3, "messages": 2}


async def test_one_flow_socket_hears_every_chain_of_the_flow_and_appends_without_bodies():
    user, chain = await sync_to_async(_make_chain)("alice")
    second = await sync_to_async(_second_chain)(chain)
    ws = await _flow_socket(chain.agent.flow_id, await sync_to_async(_session_cookie)(user))
    connected, _ = await ws.connect()
    assert connected
    hello = await ws.receive_json_from(timeout=2)
    assert hello == {"type": "hello", "flow_id": chain.agent.flow_id, "chain_ids": sorted([chain.pk, second.pk])}
    await sync_to_async(broadcast)(second.pk, _view_updated(second.pk))
    assert (await ws.receive_json_from(timeout=2))["chain_id"] == second.pk
    await sync_to_async(broadcast)(chain.pk, {"type": "message.appended", "chain_id": chain.pk, "last_seq": 1,
                                              "messages": [{"seq": 1, "role": "user", "content": "secret text"}]})
    assert await ws.receive_json_from(timeout=2) == {"type": "message.appended", "chain_id": chain.pk, "last_seq": 1}
    await ws.disconnect()


async def test_a_chain_added_to_the_flow_later_is_heard_without_reconnecting(settings):
    settings.LIVE_HEARTBEAT_SECONDS = 0.05
    user, chain = await sync_to_async(_make_chain)("alice")
    ws = await _flow_socket(chain.agent.flow_id, await sync_to_async(_session_cookie)(user))
    await ws.connect()
    await ws.receive_json_from(timeout=2)
    later = await sync_to_async(_second_chain)(chain)
    assert await ws.receive_json_from(timeout=5) == {"type": "flow.chain_added", "flow_id": chain.agent.flow_id,
                                                     "chain_id": later.pk}
    await sync_to_async(broadcast)(later.pk, _view_updated(later.pk))
    assert (await ws.receive_json_from(timeout=2))["chain_id"] == later.pk
    await ws.disconnect()


async def test_another_users_flow_and_an_anonymous_visitor_are_refused():
    _, chain = await sync_to_async(_make_chain)("alice")
    mallory, _ = await sync_to_async(_make_chain)("mallory")
    ws = await _flow_socket(chain.agent.flow_id, await sync_to_async(_session_cookie)(mallory))
    assert await ws.connect() == (False, 4404)
    ws = await _flow_socket(chain.agent.flow_id, None)
    assert await ws.connect() == (False, 4401)


async def test_the_flow_socket_takes_one_slot_of_the_users_cap(monkeypatch):
    monkeypatch.setattr(ws_limits, "MAX_SOCKETS_PER_USER", 1)
    user, chain = await sync_to_async(_make_chain)("alice")
    await sync_to_async(_second_chain)(chain)
    cookie = await sync_to_async(_session_cookie)(user)
    first = await _flow_socket(chain.agent.flow_id, cookie)
    assert (await first.connect())[0]
    assert ws_limits.sockets_open(user.pk) == 1
    second = await _flow_socket(chain.agent.flow_id, cookie)
    assert (await second.connect())[0]  # accepted, so that the browser can read why it is closed
    assert await second.receive_output() == {"type": "websocket.close", "code": ws_limits.CLOSE_TOO_MANY}
    await first.disconnect()
    assert ws_limits.sockets_open(user.pk) == 0
