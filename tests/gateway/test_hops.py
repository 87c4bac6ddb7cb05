"""flows.gateway.hops: where a gateway request's ORM work runs and what it leaves for after the response."""
from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.db import connection

from flows.gateway import hops
from flows.models import Flow

ROOT = Path(__file__).resolve().parents[2]


def _connection_state() -> tuple[str, int | None]:
    Flow.objects.exists()  # opens this thread's connection
    return threading.current_thread().name, id(connection.connection)


async def _under_handler(fn: Any, *args: Any) -> Any:
    with hops.under_gateway_handler():
        return await hops.run(fn, *args)


@pytest.mark.django_db
def test_outside_the_gateway_handler_a_hop_is_djangos_own_and_sees_the_tests_rows(user: Any) -> None:
    Flow.objects.create(owner=user, title="only in this test's transaction")
    # as Django's test client calls an async view: from the test's thread, through async_to_sync
    titles = async_to_sync(hops.run)(lambda: list(Flow.objects.values_list("title", flat=True)))
    assert titles == ["only in this test's transaction"]
    assert hops.after_response(lambda: asyncio.sleep(0)) is False  # no handler: the caller runs it itself


@pytest.mark.django_db(transaction=True)
def test_under_the_gateway_handler_the_pool_threads_keep_their_connection(settings: Any) -> None:
    async def hops_in_a_row() -> list[tuple[str, int | None]]:
        return [await _under_handler(_connection_state) for _ in range(2 * settings.GATEWAY_DB_THREADS + 1)]

    seen = asyncio.run(hops_in_a_row())
    connections_by_thread: dict[str, set[int | None]] = {}
    for thread, conn in seen:
        connections_by_thread.setdefault(thread, set()).add(conn)
    assert all(thread.startswith("gateway-db") for thread in connections_by_thread)
    assert len(connections_by_thread) < len(seen)  # more hops than threads: some thread served several
    assert all(len(conns) == 1 for conns in connections_by_thread.values())  # each kept its one connection


@pytest.fixture
def one_pool_thread(settings: Any) -> Iterator[None]:
    """A pool of one thread, so consecutive hops are known to run on the same thread (a bigger pool hands a
    hop to whichever thread is idle, and which one that is depends on the machine's load)."""
    settings.GATEWAY_DB_THREADS = 1
    saved, hops.POOL.executor = hops.POOL.executor, None
    try:
        yield
    finally:
        if hops.POOL.executor is not None:
            hops.POOL.executor.shutdown(wait=True)
        hops.POOL.executor = saved


@pytest.mark.django_db(transaction=True)
def test_a_connection_left_in_a_transaction_or_too_old_is_closed_after_the_hop(settings: Any,
                                                                                 one_pool_thread: None) -> None:
    def leave_a_transaction_open() -> bool:
        Flow.objects.exists()
        connection.set_autocommit(False)
        return True

    def closed_now() -> bool:
        return connection.connection is None

    async def scenario() -> list[bool]:
        await _under_handler(_connection_state)
        kept = not await _under_handler(closed_now)  # a healthy young connection stays open for the next hop
        await _under_handler(leave_a_transaction_open)
        after_transaction = await _under_handler(closed_now)
        await _under_handler(_connection_state)
        settings.GATEWAY_DB_CONN_MAX_AGE = 0
        await _under_handler(_connection_state)
        after_max_age = await _under_handler(closed_now)
        return [kept, after_transaction, after_max_age]

    assert asyncio.run(scenario()) == [True, True, True]


def test_jobs_left_for_after_the_response_start_once_it_is_out() -> None:
    ran: list[str] = []

    async def job() -> None:
        ran.append("job")

    async def request() -> None:
        with hops.under_gateway_handler() as jobs:
            assert hops.after_response(job) is True
            ran.append("response")
            hops.start_after_response(jobs)
        assert ran == ["response"]  # started later, not at once
        await asyncio.wait_for(asyncio.gather(*hops._started), timeout=30)

    asyncio.run(request())
    assert ran == ["response", "job"]


@pytest.mark.parametrize(("name", "value"), [("GATEWAY_DB_THREADS", "0"), ("GATEWAY_DB_THREADS", "four"),
                                             ("GATEWAY_DB_CONN_MAX_AGE", "-1")])
def test_an_unusable_pool_setting_stops_the_process_with_its_name(name: str, value: str) -> None:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "pentagi_web.settings", name: value}
    done = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode != 0
    assert f"ImproperlyConfigured: {name}={value!r}: must be" in done.stderr
