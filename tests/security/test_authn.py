"""Authentication on every page, API endpoint and socket, enumerated from the URL resolvers and the socket router.

A route added later is covered automatically; only the login/logout pages, the API description and static
files are public."""
from __future__ import annotations

import pytest
from channels.testing import WebsocketCommunicator
from django.db import connections
from django.test import Client

from flows.live import websocket_urlpatterns
from flows.models import ProviderConfig
from pentagi_web.asgi import application
from tests.security.urls_enum import PUBLIC_PREFIXES, all_routes, fill

pytestmark = pytest.mark.django_db
LOGIN_PAGES = ("/accounts/login/", "/admin/login/")
MIN_ROUTES = 20  # the API, the pages and the admin: far more than this; fewer means the walk broke


def _provider_id() -> int:
    """A real upstream, so the staff providers pages (/providers/{provider_id}/...) resolve to an object."""
    return ProviderConfig.objects.create(name="sweep", base_url="http://127.0.0.1:9/v1", model="m").pk


@pytest.fixture
def ids(make_chain, tool_round) -> dict[str, str]:
    chain = make_chain(tool_round)
    flow = chain.agent.flow
    return {"flow_id": flow.pk, "chain_id": chain.pk, "seq": 1, "profile": "agent", "rest": "anything",
            "app_label": "flows", "object_id": flow.pk, "model_name": "flow", "content_type_id": 1,
            "url": "flows/flow/", "id": 1, "event_id": 1, "fmt": "openai", "call_id": 1,
            "response_id": "resp_" + "0" * 48, "provider_id": _provider_id()}


def _protected(ids: dict[str, str]) -> list[str]:
    paths = [fill(r, ids) for r in all_routes() if not r.template.startswith(PUBLIC_PREFIXES)]
    assert all(paths), [r.template for r in all_routes() if fill(r, ids) is None]
    assert len(paths) >= MIN_ROUTES
    return paths


def _refused(response) -> bool:
    """Redirected to a login page, or an explicit 401/403/404/405: never the content, never a 500."""
    if response.status_code in (301, 302):
        return response["Location"].split("?")[0].endswith(LOGIN_PAGES) or response["Location"].startswith(
            tuple(f"http://testserver{p}" for p in LOGIN_PAGES))
    return response.status_code in (401, 403, 404, 405)


@pytest.mark.parametrize("method", ["get", "post", "put", "delete"])
def test_every_route_refuses_an_anonymous_visitor(ids, method):
    client = Client()
    for path in _protected(ids):
        response = getattr(client, method)(path)
        assert _refused(response), (method, path, response.status_code)
        if path.startswith("/api/") and response.status_code == 401:
            assert response.json()["error"] == "unauthorized"


def test_every_api_route_refuses_a_wrong_or_malformed_bearer_token(ids):
    for header in ("Bearer not-a-token", "Bearer ", "Basic YWxpY2U6cGFzcw==", "Bearer " + "x" * 5000, "Token abc"):
        client = Client(HTTP_AUTHORIZATION=header)
        for path in [p for p in _protected(ids) if p.startswith("/api/")]:
            response = client.get(path)
            assert response.status_code in (401, 404, 405), (header[:20], path, response.status_code)


def test_a_bearer_token_does_not_open_the_pages_or_the_admin(ids, api_token):
    client = Client(HTTP_AUTHORIZATION=f"Bearer {api_token}")
    for path in [p for p in _protected(ids) if not p.startswith(("/api/", "/v1/"))]:  # bearer-token APIs
        assert _refused(client.get(path)), path


def test_the_login_page_and_the_api_description_are_public():
    client = Client()
    assert client.get("/accounts/login/").status_code == 200
    assert client.get("/api/openapi.json").status_code == 200


def _socket_paths(chain_id: int, flow_id: int) -> list[str]:
    paths = []
    for pattern in websocket_urlpatterns:
        route = str(pattern.pattern)
        paths.append("/" + route.replace("<int:chain_id>", str(chain_id)).replace("<int:flow_id>", str(flow_id)))
    assert not any("<" in path for path in paths), paths  # every socket route gets a concrete id
    return paths


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_every_socket_refuses_an_anonymous_visitor(make_chain, tool_round):
    from channels.db import database_sync_to_async

    chain = await database_sync_to_async(make_chain)(tool_round)
    paths = _socket_paths(chain.pk, chain.agent.flow_id)
    assert paths
    for path in paths:
        comm = WebsocketCommunicator(application, path, headers=[(b"origin", b"http://localhost"),
                                                                 (b"host", b"localhost")])
        connected, code = await comm.connect()
        assert not connected, path
        assert code in (4401, 403, 1000), code
        await comm.disconnect()
    # Close the ORM thread's connection: PostgreSQL drops the test database only when no session is left.
    await database_sync_to_async(connections.close_all)()
