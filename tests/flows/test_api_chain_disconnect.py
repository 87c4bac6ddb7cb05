"""GET /api/chains/{id} under ASGI: a client that goes away stops the read between its steps."""
from __future__ import annotations

import asyncio
import threading
import time
from unittest import mock

import pytest
import pytest_asyncio
from asgiref.sync import sync_to_async
from asgiref.testing import ApplicationCommunicator
from django.contrib.auth import get_user_model
from django.db import connections

from flows.api import views_chains
from flows.ingest import agent_create, api_token_create, chain_append, flow_create
from pentagi_web.asgi import application

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


@pytest_asyncio.fixture(autouse=True)
async def _close_worker_connections():
    yield
    await sync_to_async(connections.close_all)()


def _chain_and_token() -> tuple[int, str]:
    user = get_user_model().objects.create_user(username="alice", password="pw-for-tests-only")
    chain = agent_create(flow=flow_create(owner=user, title="scan"), agent_type="pentester").chains.get()
    chain_append(chain=chain, messages=[{"role": "user", "content": "scan 10.0.0.5"}])
    return chain.pk, api_token_create(user=user)[1]


def _scope(chain_id: int, token: str) -> dict:
    return {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
            "path": f"/api/chains/{chain_id}", "raw_path": f"/api/chains/{chain_id}".encode(), "query_string": b"",
            "headers": [(b"host", b"localhost"), (b"authorization", f"Bearer {token}".encode())],
            "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 8000)}


async def test_a_client_that_goes_away_stops_the_read_before_the_view_is_built():
    chain_id, token = await sync_to_async(_chain_and_token)()
    page_started, release_page, page_done, view_built = (threading.Event() for _ in range(4))
    real_page = views_chains.chain_page_json

    def slow_page(*args, **kwargs):
        page_started.set()
        release_page.wait(timeout=30)  # the client disconnects while this step runs
        try:
            return real_page(*args, **kwargs)
        finally:
            page_done.set()

    def view(*args, **kwargs):
        view_built.set()
        return {"view": [], "sections": []}, {}

    with mock.patch.object(views_chains, "chain_page_json", slow_page), \
            mock.patch.object(views_chains, "chain_view_json", view):
        app = ApplicationCommunicator(application, _scope(chain_id, token))
        await app.send_input({"type": "http.request", "body": b"", "more_body": False})
        await _until(page_started.is_set)
        await app.send_input({"type": "http.disconnect"})
        await _until(app.input_queue.empty)  # Django's disconnect listener has taken it
        release_page.set()
        await _until(page_done.is_set)
        await app.wait(timeout=30)
    assert not view_built.is_set()


async def _until(condition, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{condition} never became true"
        await asyncio.sleep(0.01)


async def test_a_client_that_stays_gets_the_whole_first_page():
    chain_id, token = await sync_to_async(_chain_and_token)()
    app = ApplicationCommunicator(application, _scope(chain_id, token))
    await app.send_input({"type": "http.request", "body": b"", "more_body": False})
    start = await app.receive_output(timeout=5)
    body = await app.receive_output(timeout=5)
    assert start["status"] == 200 and b'"view"' in body["body"]
