"""Background work the services ask for, queued by Celery task name once the current transaction commits.

The services sit below the tasks (a task calls one service), so they never import `flows.pipeline.tasks`: they name
the task instead, and Celery's registry finds it (`flows.pipeline.tasks` registers these names). Queuing after
commit means a worker never looks for rows that are not visible yet, and a rolled-back write queues nothing.

Code that answers before the publish needs to happen (the gateway, whose every call queues a summarization)
runs inside `publishing_in_background()`: there `enqueue` hands the task to one background thread per process
(the outbox) instead of publishing it itself, which is about a millisecond of building a Celery message and
handing it to the broker. A failed publish is logged, as it is when queued after commit; at exit the outbox is
drained. In eager mode (CELERY_TASK_ALWAYS_EAGER) tasks always run at once, in line.

A broker that does not answer (Redis down: kombu's OperationalError, within about a second of publish retries) is
`BrokerUnreachable` from `enqueue`, so callers can say so (the append's `summarization`, compaction's 503)
instead of the task being silently dropped.
"""
from __future__ import annotations

import atexit
import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from celery import current_app
from django.db import connection, transaction
from kombu.exceptions import OperationalError

__all__ = ["SUMMARIZE_CHAIN", "COMPACT_CHAIN", "FIT_CHAIN", "TASK_NAMES", "enqueue", "enqueue_on_commit",
           "outbox_drain", "publishing_in_background", "BrokerUnreachable", "NOT_QUEUED_REASON"]

log = logging.getLogger(__name__)

SUMMARIZE_CHAIN = "flows.summarize_chain"  # after an agent turn: summarize, then fit to the window
COMPACT_CHAIN = "flows.compact_chain"  # a manual "compact now" whose RUNNING event already exists
FIT_CHAIN = "flows.fit_chain"  # fit the current view to the model's window on demand
TASK_NAMES = (SUMMARIZE_CHAIN, COMPACT_CHAIN, FIT_CHAIN)
NOT_QUEUED_REASON = "not queued: broker unreachable"


class BrokerUnreachable(RuntimeError):
    """The task could not be handed to the broker (its connection was refused or timed out)."""


Refused = Callable[[], None]  # what the outbox thread runs when the broker refused a task put with it


class _Outbox:
    """Tasks to publish, in order, from one daemon thread (started on first use in each process)."""

    def __init__(self) -> None:
        self._items: queue.SimpleQueue[tuple[str, tuple[Any, ...], Refused | None, float]] = queue.SimpleQueue()
        self._idle = threading.Condition()
        self._unpublished = 0
        self._pid = 0

    def put(self, task_name: str, args: tuple[Any, ...], refused: Refused | None = None, delay: float = 0.0) -> None:
        with self._idle:
            if self._pid != os.getpid():  # first use, or a forked worker child: the parent's thread is not here
                self._items, self._unpublished, self._pid = queue.SimpleQueue(), 0, os.getpid()
                threading.Thread(target=self._publish_forever, name="task-outbox", daemon=True).start()
            self._unpublished += 1
        self._items.put((task_name, args, refused, delay))

    def drain(self, timeout: float) -> bool:
        """Wait until everything put so far is published; False on timeout."""
        deadline = time.monotonic() + timeout
        with self._idle:
            while self._unpublished:
                left = deadline - time.monotonic()
                if left <= 0 or not self._idle.wait(left):
                    return False
        return True

    def _publish_forever(self) -> None:
        items = self._items
        while True:
            task_name, args, refused, delay = items.get()
            try:
                _publish(task_name, args, delay)
            except OperationalError:
                log.warning("could not queue %s%r: broker unreachable", task_name, args, exc_info=True)
                _tell(refused)
            except Exception:
                log.exception("could not queue %s%r", task_name, args)
            with self._idle:
                self._unpublished -= 1
                self._idle.notify_all()


def _tell(refused: Refused | None) -> None:
    """Run the caller's record of a refused publish (it writes a row: its connection is closed after)."""
    if refused is None:
        return
    try:
        refused()
    except Exception:
        log.exception("could not record a refused publish")
    finally:
        connection.close()


_OUTBOX = _Outbox()
atexit.register(_OUTBOX.drain, 5.0)


def outbox_drain(timeout: float = 10.0) -> bool:
    """Wait until every task queued so far in this process has been handed to the broker."""
    return _OUTBOX.drain(timeout)


_background = threading.local()


@contextmanager
def publishing_in_background() -> Iterator[None]:
    """Within this block, in this thread, `enqueue` leaves publishing to the outbox thread."""
    previous = getattr(_background, "on", False)
    _background.on = True
    try:
        yield
    finally:
        _background.on = previous


def _publish(task_name: str, args: tuple[Any, ...], delay: float) -> None:
    task = current_app.tasks[task_name]
    if delay > 0:
        task.apply_async(args, countdown=delay)  # the worker holds it that long (eager mode runs it at once)
    else:
        task.delay(*args)


def enqueue(task_name: str, *args: Any, refused: Refused | None = None, delay: float = 0.0) -> bool:
    """Queue the registered task (it honours the app's eager mode, unlike `send_task`), to run no sooner than
    `delay` seconds from now; inside `publishing_in_background` the outbox thread publishes it (and runs `refused`
    if the broker does not answer) and this returns False: not queued yet. Raises BrokerUnreachable when
    publishing here failed."""
    if task_name not in TASK_NAMES:
        raise ValueError(f"unknown task {task_name!r}")
    if getattr(_background, "on", False) and not current_app.conf.task_always_eager:
        _OUTBOX.put(task_name, args, refused, delay)
        return False
    try:
        _publish(task_name, args, delay)
    except OperationalError as exc:  # kombu's word for a broker connection that failed after its retries
        raise BrokerUnreachable(f"{NOT_QUEUED_REASON} ({exc})") from exc
    return True


def enqueue_on_commit(task_name: str, *args: Any) -> None:
    """Queue the task when the current transaction commits (at once outside a transaction)."""
    if task_name not in TASK_NAMES:
        raise ValueError(f"unknown task {task_name!r}")
    transaction.on_commit(lambda: enqueue(task_name, *args))
