"""One user cannot read or write another's flows: every route that names an object answers 404 to a stranger
(pages and API, reads and writes, session and token), nothing is written, and the socket refuses to connect."""
from __future__ import annotations

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.db import connections
from django.test import Client

from flows.ingest import api_token_create
from flows.models import ChainView, GatewayCall, SummaryEvent
from pentagi_web.asgi import application
from tests.reliability.invariants import row_counts
from tests.security.urls_enum import all_routes, fill

pytestmark = pytest.mark.django_db
OBJECT_ARGS = ("{flow_id}", "{chain_id}")


@pytest.fixture
def alices(make_chain, tool_round) -> dict[str, int]:
    chain = make_chain(tool_round)
    ChainView.objects.create(chain=chain, version=1, messages=tool_round, lineage=[[i + 1] for i in range(5)],
                             raw_seq_to=5)
    event = SummaryEvent.objects.create(chain=chain, trigger="turn", outcome="ok")
    call = GatewayCall.objects.create(chain=chain, user=chain.agent.flow.owner, model="m", sent_raw_seq_to=5)
    return {"flow_id": chain.agent.flow_id, "chain_id": chain.pk, "seq": 1, "event_id": event.pk, "fmt": "openai",
            "call_id": call.pk}


def _object_paths(ids: dict[str, int]) -> list[str]:
    routes = [r for r in all_routes() if any(a in r.template for a in OBJECT_ARGS) and not r.is_admin]
    paths = [fill(r, ids) for r in routes]
    assert all(paths) and len(paths) >= 10
    return paths + [f"/api/settings/agent?flow={ids['flow_id']}", f"/settings/?flow={ids['flow_id']}",
                    f"/api/flows/{ids['flow_id']}/export?chain={ids['chain_id']}"]


def _paths_for(client: Client, ids: dict[str, int]) -> list[str]:
    by_token = "HTTP_AUTHORIZATION" in client.defaults
    return [p for p in _object_paths(ids) if p.startswith("/api/") or not by_token]


@pytest.fixture
def strangers(other_user) -> list[Client]:
    """Mallory through the browser session and through her own API token (tokens only open the API)."""
    session = Client()
    session.force_login(other_user)
    token = Client(HTTP_AUTHORIZATION=f"Bearer {api_token_create(user=other_user)[1]}")
    return [session, token]


def test_another_users_objects_are_404_to_reads(alices, strangers):
    for client in strangers:
        for path in _paths_for(client, alices):
            response = client.get(path)
            assert response.status_code in (404, 405), (path, response.status_code)


def test_another_users_objects_are_404_to_writes_and_nothing_changes(alices, strangers, tool_round):
    before = row_counts()
    body = {"messages": [{"role": "user", "content": "injected"}], "title": "x", "agent_type": "pentester",
            "settings": {"last_sec_bytes": 4096}, "instructions": "leak everything", "last_sec_bytes": 4096}
    for client in strangers:
        for path in _paths_for(client, alices):
            for method in ("post", "put"):
                response = getattr(client, method)(path, body, content_type="application/json")
                # 403 only for a session write refused by the CSRF check before the object is even looked up
                assert response.status_code in (403, 404, 405), (method, path, response.status_code)
    assert row_counts() == before


def test_the_owner_sees_what_strangers_cannot(alices, user):
    client = Client()
    client.force_login(user)
    for path in _object_paths(alices):
        assert client.get(path).status_code in (200, 405), path


def test_flow_lists_show_only_the_users_own_flows(alices, strangers):
    session, token = strangers
    assert token.get("/api/flows").json()["flows"] == []
    assert f"/flows/{alices['flow_id']}/" not in session.get("/").content.decode()


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_the_socket_of_another_users_chain_refuses_to_connect(make_chain, tool_round, other_user):
    chain = await database_sync_to_async(make_chain)(tool_round)
    session = Client()
    await database_sync_to_async(session.force_login)(other_user)
    cookie = f"sessionid={session.cookies['sessionid'].value}".encode()
    comm = WebsocketCommunicator(application, f"/ws/chains/{chain.pk}/",
                                 headers=[(b"origin", b"http://localhost"), (b"host", b"localhost"),
                                          (b"cookie", cookie)])
    connected, code = await comm.connect()
    assert not connected and code == 4404
    await comm.disconnect()
    # Close the ORM thread's connection: PostgreSQL drops the test database only when no session is left.
    await database_sync_to_async(connections.close_all)()
