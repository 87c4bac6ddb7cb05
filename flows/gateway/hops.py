"""Where a gateway request's ORM work runs: a small pool of threads that keep their database connection.

Django runs the sync code of an ASGI request in a thread made for that request (`ThreadSensitiveContext`),
opens a database connection there and closes it when the request ends; its request signals add a thread hop
at each end. For a page that is noise; for the gateway, which answers an agent's every model call, it was
about a third of the time it adds to a call (a new thread, a new connection with its PRAGMAs, four thread
wake-ups, each slow on a virtual machine's idle CPU). So under `GatewayHandler` (flows/gateway/asgi.py)
ORM work runs here instead: GATEWAY_DB_THREADS threads, each keeping its connection for up to
GATEWAY_DB_CONN_MAX_AGE seconds (at most that many connections per server process, idle ones included; a
connection that saw an error and no longer answers, or that was left in a transaction, is closed at once):
a `flows.core.DbThreadPool` of its own beside the API's.

A request may also leave jobs for after its response (`after_response`: the call record the gateway writes
once the agent has its answer); the handler starts them AFTER_RESPONSE_DELAY_SECONDS after handing the
response to the server, so their thread does not hold the interpreter lock while the server writes it.

Anywhere else (Django's test client, which runs a view inside the test's transaction) `run` is Django's own
thread-sensitive hop, so a test sees the same rows as the view, and there are no after-response jobs.
"""
from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

from asgiref.sync import sync_to_async

from flows.core import DbThreadPool, publishing_in_background

__all__ = ["in_gateway_handler", "under_gateway_handler", "run", "after_response", "start_after_response"]

T = TypeVar("T")
AFTER_RESPONSE_DELAY_SECONDS = 0.001

Job = Callable[[], Awaitable[None]]

_UNDER_HANDLER: ContextVar[list[Job] | None] = ContextVar("gateway_after_response", default=None)
_started: set[asyncio.Task[None]] = set()  # jobs running after their response (referenced until done)


@contextmanager
def under_gateway_handler() -> Iterator[list[Job]]:
    """Mark the current task as served by GatewayHandler: its ORM work goes to the pool, and the jobs it
    leaves for after the response (`after_response`) collect in the list yielded."""
    jobs: list[Job] = []
    token = _UNDER_HANDLER.set(jobs)
    try:
        yield jobs
    finally:
        _UNDER_HANDLER.reset(token)


def in_gateway_handler() -> bool:
    return _UNDER_HANDLER.get() is not None


def after_response(job: Job) -> bool:
    """Leave `job` to run once the response is on its way (under GatewayHandler); False elsewhere, where the
    caller runs it itself."""
    jobs = _UNDER_HANDLER.get()
    if jobs is None:
        return False
    jobs.append(job)
    return True


def start_after_response(jobs: list[Job]) -> None:
    """Start the jobs a request left, after AFTER_RESPONSE_DELAY_SECONDS: the server writes the response on
    a later turn of the event loop, and a job's thread holding the interpreter lock then would delay it."""
    if jobs:
        task = asyncio.ensure_future(_run_later(list(jobs)))
        _started.add(task)
        task.add_done_callback(_started.discard)


async def _run_later(jobs: list[Job]) -> None:
    await asyncio.sleep(AFTER_RESPONSE_DELAY_SECONDS)
    await asyncio.gather(*(job() for job in jobs), return_exceptions=True)


POOL = DbThreadPool("gateway-db", "GATEWAY_DB_THREADS")


async def run(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """`fn(*args, **kwargs)` in a thread that may use the ORM, awaited from the event loop."""
    if not in_gateway_handler():
        return await sync_to_async(fn)(*args, **kwargs)
    return await POOL.run(_published_in_background, fn, *args, **kwargs)


def _published_in_background(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    with publishing_in_background():  # the summarization a turn queues is published off the call's path
        return fn(*args, **kwargs)
