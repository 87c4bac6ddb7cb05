"""What one API append costs, in deterministic counts: SQL statements, thread hops, Python function calls.

The machine these run on is shared, so wall-clock figures of one request are noise; counts of the same work are
not. An agent's 4-message turns (bench/server_load.py's `agent_turn`) are appended through
`pentagi_web.asgi.application` itself, in this process (the ASGI app Daphne serves, with a bearer token, on a
fresh database), and each append is counted:
  - SQL statements sent (BEGIN included where the backend sends one; COMMIT is not a statement here) and
    database connections opened,
  - thread hops (asgiref `sync_to_async` calls: the page middleware's, the request signals', the view's),
  - Python function calls on every thread (a profile hook on all threads; the summarization the turn queues
    is not run: there is no worker in this process, only its publish to the in-memory broker is counted),
  - per-append live work: events broadcast and summarization tasks published,
  - with --postgres, PostgreSQL's CPU per append: user + system time of the throwaway database's backends
    (/proc, the server on this machine), which the profile hook does not slow; a time, not a count, but one that
    moves little with the machine's load.
The first appends warm caches (the token check, the URL resolver); the figures are the mean over the rest.

Usage: .venv/bin/python bench/append_counts.py [--appends 30] [--postgres]
       (--postgres: a throwaway database on BENCH_POSTGRES_URL's server, default postgres://postgres@127.0.0.1:5432)
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from append_cpu import cpu_seconds, database_backends  # noqa: E402
from django_env import bench_database  # noqa: E402
from server_load import agent_turn  # noqa: E402

WARM_UP = 5


class Counts:
    """Tallies while `on`: statements (per connection wrapper), hops, Python calls on all threads."""

    def __init__(self) -> None:
        self.on = False
        self.tally: Counter[str] = Counter()
        self._lock = threading.Lock()

    def add(self, key: str, n: int = 1) -> None:
        if self.on:
            with self._lock:
                self.tally[key] += n

    def profile(self, frame: Any, event: str, arg: Any) -> None:
        if event == "call" and self.on:
            self.tally["calls"] += 1  # the GIL makes this increment safe enough for a count


def _instrument(counts: Counts) -> None:
    from asgiref import sync as asgiref_sync
    from django.db.backends.signals import connection_created

    def statement(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        counts.add("statements")
        return execute(sql, params, many, context)

    def on_connection(sender: Any, connection: Any, **kwargs: Any) -> None:
        counts.add("connections")
        if statement not in connection.execute_wrappers:
            connection.execute_wrappers.append(statement)

    connection_created.connect(on_connection, weak=False)
    hop = asgiref_sync.SyncToAsync.__call__

    async def counted_hop(self: Any, *args: Any, **kwargs: Any) -> Any:
        counts.add("hops")
        return await hop(self, *args, **kwargs)

    asgiref_sync.SyncToAsync.__call__ = counted_hop  # type: ignore[method-assign]
    import flows.core.events as events
    import flows.core.queue as queue

    send, publish = events._send, queue.current_app.tasks.__class__.__getitem__

    def counted_send(*args: Any) -> None:
        counts.add("broadcasts")
        send(*args)

    events._send = counted_send

    def counted_task(tasks: Any, name: str) -> Any:
        counts.add("tasks published")
        return publish(tasks, name)

    queue.current_app.tasks.__class__.__getitem__ = counted_task  # type: ignore[method-assign]


async def _request(app: Any, token: str, method: str, path: str, payload: Any) -> tuple[int, Any]:
    body = json.dumps(payload).encode()
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method, "scheme": "http",
             "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
             "headers": [(b"host", b"127.0.0.1"), (b"authorization", f"Bearer {token}".encode()),
                         (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
             "client": ("127.0.0.1", 40000), "server": ("127.0.0.1", 8000)}
    incoming = [{"type": "http.request", "body": body, "more_body": False}]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        if incoming:
            return incoming.pop(0)
        await asyncio.Event().wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    return sent[0]["status"], json.loads(b"".join(m.get("body", b"") for m in sent[1:]) or b"null")


async def measure(appends: int) -> dict[str, float]:
    from django.contrib.auth import get_user_model

    from flows.ingest import api_token_create
    from pentagi_web.asgi import application

    counts = Counts()
    _instrument(counts)
    user = await asyncio.to_thread(get_user_model().objects.create_user, "bench", password="unused-password-1")
    _, token = await asyncio.to_thread(api_token_create, user=user, name="bench")
    _, flow = await _request(application, token, "POST", "/api/flows", {"title": "append counts"})
    _, agent = await _request(application, token, "POST", f"/api/flows/{flow['id']}/agents",
                              {"agent_type": "pentester"})
    path = f"/api/chains/{agent['chain_id']}/messages"
    threading.setprofile(counts.profile)
    sys.setprofile(counts.profile)
    database_cpu: dict[int, float] = {}
    try:
        for n in range(WARM_UP + appends):
            if n == WARM_UP:
                database_cpu = await asyncio.to_thread(_database_cpu)
            counts.on = n >= WARM_UP
            status, answer = await _request(application, token, "POST", path, {"messages": agent_turn(n, first=n == 0)})
            if status != 201:
                raise SystemExit(f"append failed: {status} {answer}")
    finally:
        counts.on = False
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
    after = await asyncio.to_thread(_database_cpu)
    if after:
        counts.tally["database cpu ms"] = 1000 * sum(spent - database_cpu.get(pid, 0.0) for pid, spent in after.items())
    return {key: value / appends for key, value in counts.tally.items()}


def _database_cpu() -> dict[int, float]:
    """CPU seconds so far of each PostgreSQL backend connected to this database (the API threads' kept
    connections among them); {} on SQLite."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return {}
    return {pid: cpu_seconds(pid) for pid in database_backends(connection.settings_dict["NAME"])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--appends", type=int, default=30, help="counted appends (default 30, after 5 to warm up)")
    parser.add_argument("--postgres", action="store_true", help="a throwaway PostgreSQL database instead of SQLite")
    args = parser.parse_args()
    os.environ["LOG_LEVEL"] = "WARNING"
    with bench_database("append-counts-", postgres=args.postgres) as vendor:
        figures = asyncio.run(measure(args.appends))
    database_cpu = f"{figures['database cpu ms']:.2f}" if "database cpu ms" in figures else "-"
    print("| database | statements | connections opened | thread hops | Python calls | broadcasts | tasks published "
          "| PostgreSQL CPU ms |\n"
          f"|---|---:|---:|---:|---:|---:|---:|---:|\n| {vendor} "
          f"| {figures.get('statements', 0):.1f} | {figures.get('connections', 0):.2f} | {figures.get('hops', 0):.1f} "
          f"| {figures.get('calls', 0):,.0f} "
          f"| {figures.get('broadcasts', 0):.1f} | {figures.get('tasks published', 0):.1f} | {database_cpu} |")


if __name__ == "__main__":
    main()
