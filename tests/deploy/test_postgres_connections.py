"""Daphne on PostgreSQL keeps its connections bounded by the requests in flight, and once idle only the few the
API's database threads keep (API_DB_THREADS: an agent's bearer-token appends and reads, flows/core/db_threads.py).

20 clients append to and read 20 chains at once; pg_stat_activity is sampled for the throwaway database during
the load and after it. With persistent connections under ASGI (conn_max_age > 0) each request thread kept one:
one Daphne grew to 99 and stayed there idle until PostgreSQL refused clients."""
from __future__ import annotations

import secrets
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.conf import settings

from tests.fakes import free_port
from tests.flows.pipeline_live import POSTGRES_ADMIN_URL, TOOL_ROUND, Stack, api, postgres_up

pytestmark = [pytest.mark.services,
              pytest.mark.skipif(not postgres_up(), reason="PostgreSQL is not answering on 127.0.0.1:5432")]
CLIENTS = 20
TURNS_PER_CLIENT = 10
SLACK = 5  # connections besides the requests in flight (startup checks, a request finishing as the next starts)
IDLE_WAIT_SECONDS = 3.0


@pytest.fixture
def database():
    import psycopg

    name = f"pgw_conn_{secrets.token_hex(6)}"
    with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield name
    with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _connections(name: str) -> int:
    import psycopg

    with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s", (name,)).fetchone()
    return int(row[0]) if row else 0


class Sampler:
    def __init__(self, name: str) -> None:
        self.name, self.samples, self.stop = name, [], threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            self.samples.append(_connections(self.name))
            time.sleep(0.05)

    def close(self) -> list[int]:
        self.stop.set()
        self.thread.join(timeout=5)
        return self.samples


def _client(base: str, token: str, n: int) -> int:
    flow = api(base, "POST", "/api/flows", token, {"title": f"load {n}"})
    chain_id = api(base, "POST", f"/api/flows/{flow['id']}/agents", token, {"agent_type": "pentester"})["chain_id"]
    for turn in range(TURNS_PER_CLIENT):
        batch = TOOL_ROUND if turn == 0 else [{"role": "user", "content": f"turn {turn}"},
                                              {"role": "assistant", "content": f"done {turn}"}]
        api(base, "POST", f"/api/chains/{chain_id}/messages", token, {"messages": batch})
        api(base, "GET", f"/api/chains/{chain_id}", token)
    return 2 + 2 * TURNS_PER_CLIENT


def test_daphne_holds_connections_only_while_requests_run(tmp_path, database):
    stack = Stack.create(tmp_path, DATABASE_URL=f"postgres://postgres@127.0.0.1:5432/{database}")
    try:
        creds = stack.provision()
        port = free_port()
        stack.start_daphne(port)
        base = f"http://127.0.0.1:{port}"
        sampler = Sampler(database)
        started = time.monotonic()
        with ThreadPoolExecutor(CLIENTS) as pool:
            requests = sum(pool.map(lambda n: _client(base, creds["token"], n), range(CLIENTS)))
        seconds = time.monotonic() - started
        time.sleep(IDLE_WAIT_SECONDS)
        during = sampler.close()
        after = _connections(database)
        print(f"\nPOSTGRES-CONNECTIONS clients={CLIENTS} requests={requests} seconds={seconds:.1f} "
              f"peak={max(during)} after_idle={after}")
        assert max(during) <= CLIENTS + SLACK, during
        assert after <= settings.API_DB_THREADS, stack.log("daphne")[-2000:]  # the kept ones, no more
    finally:
        stack.close()
