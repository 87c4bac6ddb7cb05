"""An agent's bearer-token API calls under ASGI: the middleware-free handler, one thread hop, kept connections.

These drive `pentagi_web.asgi.application` itself (what Daphne serves), so the route a request takes is the one a
real server gives it. Counts, not timings: the thread hops per append are pinned.
"""
from __future__ import annotations

import asyncio
import json
import threading
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from asgiref import sync as asgiref_sync
from django.db import connection, connections

from flows.api import bearer_api
from flows.core import db_threads
from flows.ingest import api_token_create
from flows.models import Message

pytestmark = pytest.mark.django_db(transaction=True)


def _scope(method: str, path: str, headers: list[tuple[bytes, bytes]], body: bytes) -> dict[str, Any]:
    return {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method, "scheme": "http",
            "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
            "headers": [(b"host", b"127.0.0.1"), (b"content-length", str(len(body)).encode()), *headers],
            "client": ("127.0.0.1", 40000), "server": ("127.0.0.1", 8000)}


async def _call(method: str, path: str, token: str, payload: Any = None) -> tuple[int, dict[str, str], Any]:
    from pentagi_web.asgi import application

    body = json.dumps(payload).encode() if payload is not None else b""
    headers = [(b"authorization", f"Bearer {token}".encode()), (b"content-type", b"application/json")]
    incoming = [{"type": "http.request", "body": body, "more_body": False}]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        if incoming:
            return incoming.pop(0)
        await asyncio.Event().wait()  # the client stays connected
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await application(_scope(method, path, headers, body), receive, send)
    start = sent[0]
    data = b"".join(m.get("body", b"") for m in sent[1:])
    return start["status"], {k.decode().lower(): v.decode() for k, v in start["headers"]}, json.loads(data or b"null")


@pytest.fixture(autouse=True)
def one_api_thread(settings: Any) -> Iterator[None]:
    """A pool of one thread, so consecutive requests are known to run on the same thread; its kept connection is
    closed afterwards (else PostgreSQL's test database could not be dropped)."""
    settings.API_DB_THREADS = 1
    saved, db_threads.API_POOL.executor = db_threads.API_POOL.executor, None
    try:
        yield
    finally:
        pool = db_threads.API_POOL.executor
        if pool is not None:
            pool.submit(connections.close_all).result()
            pool.shutdown(wait=True)
        db_threads.API_POOL.executor = saved


@pytest.fixture
def agent_chain(user: Any) -> tuple[str, int]:
    _, token = api_token_create(user=user, name="agent")

    async def chain() -> int:
        _, _, flow = await _call("POST", "/api/flows", token, {"title": "asgi"})
        _, _, agent = await _call("POST", f"/api/flows/{flow['id']}/agents", token, {"agent_type": "pentester"})
        return int(agent["chain_id"])

    return token, asyncio.run(chain())


def _turn(n: int) -> list[dict[str, Any]]:
    return [{"role": "user", "content": f"scan {n}"}, {"role": "assistant", "content": f"done {n}"}]


def test_a_bearer_append_is_one_thread_hop_on_a_kept_connection(agent_chain: tuple[str, int],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    token, chain_id = agent_chain
    hops: Counter[str] = Counter()
    where: list[tuple[str, int]] = []
    hop = asgiref_sync.SyncToAsync.__call__

    async def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        hops[getattr(self.func, "__name__", repr(self.func))] += 1
        return await hop(self, *args, **kwargs)

    def seen(*args: Any, **kwargs: Any) -> Any:
        result = append(*args, **kwargs)
        where.append((threading.current_thread().name, id(connection.connection)))
        return result

    from flows.api import views_chains
    append = views_chains.chain_append
    monkeypatch.setattr(views_chains, "chain_append", seen)
    monkeypatch.setattr(asgiref_sync.SyncToAsync, "__call__", counted)

    async def appends() -> list[tuple[int, dict[str, str], Any]]:
        return [await _call("POST", f"/api/chains/{chain_id}/messages", token, {"messages": _turn(n)})
                for n in range(3)]

    answers = asyncio.run(appends())
    assert [(status, body["last_seq"]) for status, _, body in answers] == [(201, 2), (201, 4), (201, 6)]
    assert hops == {"_tidy_after": 3}  # no middleware hop, no request-signal hop: one per append
    assert {thread for thread, _ in where} == {"api-db_0"} and len({conn for _, conn in where}) == 1
    headers = answers[0][1]
    assert headers["x-frame-options"] == "DENY" and headers["x-content-type-options"] == "nosniff"
    assert "content-security-policy" in headers
    assert Message.objects.filter(chain_id=chain_id).count() == 6


def test_a_bearer_append_to_someone_elses_chain_is_a_404_and_writes_nothing(agent_chain: tuple[str, int],
                                                                            other_user: Any) -> None:
    _, chain_id = agent_chain
    _, theirs = api_token_create(user=other_user, name="other")
    status, _, body = asyncio.run(_call("POST", f"/api/chains/{chain_id}/messages", theirs, {"messages": _turn(0)}))
    assert (status, body["error"]) == (404, "not_found")
    assert not Message.objects.filter(chain_id=chain_id).exists()


@pytest.mark.parametrize(("path", "authorization", "served_by"), [
    ("/api/chains/7/messages", b"Bearer tok", "api"),
    ("/api/chains/7/messages/", b"bearer tok", "api"),
    ("/api/chains/7", b"Bearer tok", "api"),
    ("/api/chains/7/messages", b"Basic dXNlcjpwdw==", "pages"),
    ("/api/chains/7/messages", None, "pages"),  # the browser: session, CSRF check and all
    ("/api/import", b"Bearer tok", "pages"),  # long requests keep their own thread
    ("/api/chains/7/preview", b"Bearer tok", "pages"),
    ("/api/flows", b"Bearer tok", "pages"),
])
def test_only_an_agents_bearer_calls_of_its_loop_skip_the_page_stack(path: str, authorization: bytes | None,
                                                                     served_by: str) -> None:
    served: list[str] = []

    def app(name: str) -> Any:
        async def serve(scope: Any, receive: Any, send: Any) -> None:
            served.append(name)
        return serve

    headers = [(b"authorization", authorization)] if authorization else []
    asyncio.run(bearer_api(app("pages"), app("api"))({"type": "http", "path": path, "headers": headers}, None, None))
    assert served == [served_by]
