"""ORM work of an async view in a few threads that keep their database connection (`db_run`).

Under ASGI Django serves a sync view in a thread made for its request and closes the thread's database
connection when the request ends: a new thread and a new connection per request (on SQLite 1-2 ms for the
connection and its PRAGMAs, on PostgreSQL a server process forked). An agent appending turns pays that on every
append. Requests served without Django's per-request thread (the API handler for bearer-token requests,
`flows/api/asgi.py`, inside `pooled_db_threads()`) run their ORM work here instead: API_DB_THREADS threads per
server process, each keeping its connection for up to GATEWAY_DB_CONN_MAX_AGE seconds, closed at once when it
saw an error and no longer answers, or was left inside a transaction. The gateway keeps a `DbThreadPool` of its
own (`flows/gateway/hops.py`, GATEWAY_DB_THREADS), so API traffic never queues behind model calls.

Anywhere else (the page handler with its middleware, Django's test client) `db_run` is Django's own
thread-sensitive hop, so a test sees the same rows as the view and a page's connection closes with its request.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connections

from flows.core.events import BroadcastBatch, broadcasts_batched

__all__ = ["DbThreadPool", "db_run", "pooled_db_threads", "API_POOL"]

T = TypeVar("T")

_POOLED: ContextVar[bool] = ContextVar("db_threads_pooled", default=False)
_opened = threading.local()  # per pool thread: alias -> (the DB-API connection, when it was opened)


class DbThreadPool:
    """`size_setting` threads named `name`-N, made on first use, each keeping its database connection between
    the jobs it runs (see `_keep_or_close`); the live events a job makes are sent by the awaiting loop once the
    job returns (`BroadcastBatch`), not one wake-up of the loop each while it works."""

    def __init__(self, name: str, size_setting: str) -> None:
        self.name, self.size_setting = name, size_setting
        self.executor: ThreadPoolExecutor | None = None  # tests may swap in their own (or None: made anew)
        self._lock = threading.Lock()

    def _executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self.executor is None:
                self.executor = ThreadPoolExecutor(max_workers=getattr(settings, self.size_setting),
                                                   thread_name_prefix=self.name)
            return self.executor

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """`fn(*args, **kwargs)` in one of the pool's threads, awaited from the event loop: one thread hop."""
        batch = BroadcastBatch()
        try:
            return await sync_to_async(_tidy_after, thread_sensitive=False, executor=self._executor())(
                batch, fn, *args, **kwargs)
        finally:
            batch.hand_over()


API_POOL = DbThreadPool("api-db", "API_DB_THREADS")


@contextmanager
def pooled_db_threads() -> Iterator[None]:
    """Within this block (a request served without Django's per-request thread) `db_run` uses the pool."""
    token = _POOLED.set(True)
    try:
        yield
    finally:
        _POOLED.reset(token)


async def db_run(fn: Callable[..., T], *args: Any) -> T:
    """`fn(*args)` in a thread that may use the ORM, awaited from the event loop: one thread hop."""
    if not _POOLED.get():
        return await sync_to_async(fn)(*args)
    return await API_POOL.run(fn, *args)


def _tidy_after(batch: BroadcastBatch, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    try:
        with broadcasts_batched(batch):
            return fn(*args, **kwargs)
    finally:
        _keep_or_close()


def _keep_or_close() -> None:
    """Keep this thread's connections for the next job unless broken, mid-transaction or too old."""
    now = time.monotonic()
    for conn in connections.all(initialized_only=True):
        if conn.connection is None:
            continue
        opened = getattr(_opened, conn.alias, None)
        if opened is None or opened[0] is not conn.connection:
            opened = (conn.connection, now)
            setattr(_opened, conn.alias, opened)
        unusable = conn.errors_occurred and not conn.is_usable()
        if unusable or now - opened[1] >= settings.GATEWAY_DB_CONN_MAX_AGE or conn.in_atomic_block \
                or not conn.get_autocommit():
            conn.close()
        else:
            conn.errors_occurred = False
