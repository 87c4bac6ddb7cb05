"""Issue 26 item 6: a session's end closes its sockets. Logging out closes the sockets of that session (chain and
flow sockets alike) with 4401 and they receive nothing more; deactivating the user closes all of them with 4401; a
password change closes all of them with 4503 (reconnect: the handshake then decides). Another user's sockets, and
the same user's other session on logout, stay open and keep receiving. Real sockets through the ASGI app."""
from __future__ import annotations

from typing import Any

import pytest
import pytest_asyncio
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model
from django.db import connections
from django.test import Client

from flows.core import broadcast
from flows.live import CLOSE_RECONNECT, CLOSE_SIGNED_OUT
from flows.models import Agent, Chain, Flow
from pentagi_web.asgi import application

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True), pytest.mark.timeout(60)]

PASSWORD = "pw-for-tests-only"


@pytest_asyncio.fixture(autouse=True)
async def _close_worker_connections():
    yield
    await sync_to_async(connections.close_all)()


def _user_with_chain(username: str) -> tuple[Any, Chain]:
    user = get_user_model().objects.create_user(username=username, password=PASSWORD)
    flow = Flow.objects.create(title="scan", owner=user)
    return user, Chain.objects.create(agent=Agent.objects.create(flow=flow, agent_type="pentester"))


def _signed_in(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _cookie(client: Client) -> bytes:
    return f"sessionid={client.cookies['sessionid'].value}".encode()


async def _open(path: str, cookie: bytes) -> WebsocketCommunicator:
    ws = WebsocketCommunicator(application, path, headers=[(b"origin", b"http://localhost"),
                                                            (b"host", b"localhost"), (b"cookie", cookie)])
    connected, _ = await ws.connect()
    assert connected
    assert (await ws.receive_json_from(timeout=5))["type"] == "hello"
    return ws


async def _sockets(chain: Chain, client: Client) -> list[WebsocketCommunicator]:
    flow_id = await sync_to_async(lambda: chain.agent.flow_id)()
    cookie = await sync_to_async(_cookie)(client)
    return [await _open(f"/ws/chains/{chain.pk}/", cookie), await _open(f"/ws/flows/{flow_id}/", cookie)]


def _view_updated(chain: Chain, version: int) -> dict[str, Any]:
    return {"type": "view.updated", "chain_id": chain.pk, "version": version, "raw_seq_to": 1, "byte_size": 1,
            "token_count": 1, "messages": 1}


async def _closed_with(ws: WebsocketCommunicator, code: int) -> None:
    assert await ws.receive_output(timeout=5) == {"type": "websocket.close", "code": code}


async def _still_live(ws: WebsocketCommunicator, chain: Chain, version: int) -> None:
    frame = await ws.receive_json_from(timeout=5)
    assert (frame["type"], frame["version"]) == ("view.updated", version)


async def test_logout_closes_that_sessions_sockets_and_no_one_elses() -> None:
    alice, chain = await sync_to_async(_user_with_chain)("alice")
    bob, bobs_chain = await sync_to_async(_user_with_chain)("bob")
    here, elsewhere = await sync_to_async(_signed_in)(alice), await sync_to_async(_signed_in)(alice)
    mine, alices_other, bobs = (await _sockets(chain, here), await _sockets(chain, elsewhere),
                                await _sockets(bobs_chain, await sync_to_async(_signed_in)(bob)))

    response = await sync_to_async(here.post)("/accounts/logout/")
    assert response.status_code in (200, 302)
    for ws in mine:
        await _closed_with(ws, CLOSE_SIGNED_OUT)

    await sync_to_async(broadcast)(chain.pk, _view_updated(chain, 2))
    await sync_to_async(broadcast)(bobs_chain.pk, _view_updated(bobs_chain, 3))
    for ws in mine:
        assert await ws.receive_nothing(timeout=0.5)  # closed: the event after the logout never reaches it
    for ws in alices_other:
        await _still_live(ws, chain, 2)
    for ws in bobs:
        await _still_live(ws, bobs_chain, 3)
    for ws in alices_other + bobs:
        await ws.disconnect()


@pytest.mark.parametrize(("change", "code"), [("deactivate", CLOSE_SIGNED_OUT), ("password", CLOSE_RECONNECT),
                                              ("delete", CLOSE_SIGNED_OUT)])
async def test_an_account_change_closes_all_the_users_sockets(change: str, code: int) -> None:
    alice, chain = await sync_to_async(_user_with_chain)("alice")
    bob, bobs_chain = await sync_to_async(_user_with_chain)("bob")
    alices = await _sockets(chain, await sync_to_async(_signed_in)(alice)) + \
        await _sockets(chain, await sync_to_async(_signed_in)(alice))
    bobs = await _sockets(bobs_chain, await sync_to_async(_signed_in)(bob))

    def apply() -> None:
        if change == "deactivate":
            alice.is_active = False
            alice.save()
        elif change == "password":
            alice.set_password("a-new-password-for-tests")
            alice.save()
        else:
            alice.delete()

    await sync_to_async(apply)()
    for ws in alices:
        await _closed_with(ws, code)
    await sync_to_async(broadcast)(bobs_chain.pk, _view_updated(bobs_chain, 4))
    for ws in bobs:
        await _still_live(ws, bobs_chain, 4)
        await ws.disconnect()


async def test_after_a_password_change_only_the_session_that_made_it_reconnects() -> None:
    """The 4503 reconnect meets Channels' session check: the changed hash locks every other session out."""
    alice, chain = await sync_to_async(_user_with_chain)("alice")
    changer, other = await sync_to_async(_signed_in)(alice), await sync_to_async(_signed_in)(alice)

    def change_password() -> None:
        response = changer.post("/admin/password_change/", {"old_password": PASSWORD,
                                                             "new_password1": "A-new-pw-4-tests!",
                                                             "new_password2": "A-new-pw-4-tests!"})
        assert response.status_code in (200, 302)

    alice.is_staff = True
    await sync_to_async(alice.save)()
    sockets = await _sockets(chain, changer)
    await sync_to_async(change_password)()
    for ws in sockets:
        await _closed_with(ws, CLOSE_RECONNECT)
    again = await _open(f"/ws/chains/{chain.pk}/", await sync_to_async(_cookie)(changer))
    await again.disconnect()
    locked_out = WebsocketCommunicator(application, f"/ws/chains/{chain.pk}/", headers=[
        (b"origin", b"http://localhost"), (b"host", b"localhost"), (b"cookie", await sync_to_async(_cookie)(other))])
    assert await locked_out.connect() == (False, CLOSE_SIGNED_OUT)
