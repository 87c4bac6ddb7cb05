"""The periodic sweep: nothing stays "running" forever, in any deployment.

The recovery at start (`recovery.py` here and in flows/pipeline/) only runs when a server or worker starts, and
plain Daphne with a separate Celery worker may never restart. So every server process (`manage.py run` and plain
`daphne pentagi_web.asgi:application` alike: both load pentagi_web/asgi.py, which starts it) runs this sweep in one
daemon thread every SWEEP_INTERVAL_SECONDS: gateway calls and summary events older than the longest provider
timeout, summarizing deadline and a minute (twice the broker's visibility timeout for events, when that is
longer) are closed as failed "abandoned", half-written imports a killed process left are removed, and
summarizations the broker refused (the append said "not queued: broker unreachable") are queued again once it
answers, as are those whose coalescing flag (`Chain.summary_queued_at`) is as old as the events' cutoff (the
queued task was lost with its worker). Each pass is a few indexed UPDATEs; several server processes sweeping the
same rows is harmless (each row is closed once).
"""
from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import connection

from flows.gateway.recovery import CALL_ABANDONED_REASON, gateway_calls_close_interrupted, longest_call_seconds
from flows.ingest import imports_remove_interrupted
from flows.pipeline import events_close_abandoned, not_queued_requeue, summaries_requeue_stale

__all__ = ["Swept", "abandoned_sweep", "sweeper_start"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Swept:
    calls: int
    events: int
    imports: int
    requeued: int = 0

    def __bool__(self) -> bool:
        return bool(self.calls or self.events or self.imports or self.requeued)


def _events_cutoff_seconds(calls_cutoff: float) -> float:
    """Events run in workers: on Redis a killed task comes back within a visibility timeout, so wait twice that."""
    if str(settings.CELERY_BROKER_URL).startswith("memory://"):
        return calls_cutoff
    visibility = float(settings.CELERY_BROKER_TRANSPORT_OPTIONS.get("visibility_timeout", 300))
    return max(calls_cutoff, 2 * visibility)


def abandoned_sweep(*, now: datetime | None = None) -> Swept:
    """One pass; `now` is injectable so a test ages nothing and sleeps never."""
    cutoff = longest_call_seconds()
    events_cutoff = _events_cutoff_seconds(cutoff)
    return Swept(
        calls=gateway_calls_close_interrupted(older_than_seconds=cutoff, now=now, reason=CALL_ABANDONED_REASON),
        events=events_close_abandoned(older_than_seconds=events_cutoff, now=now),
        imports=imports_remove_interrupted(now=now),
        requeued=not_queued_requeue() + summaries_requeue_stale(older_than_seconds=events_cutoff, now=now))


_started: dict[int, threading.Thread] = {}  # pid -> this process's sweeper (a forked child starts its own)
_lock = threading.Lock()


def sweeper_start(interval: float | None = None) -> bool:
    """Start this process's sweeper thread once (the first pass at once); False when disabled (interval 0)."""
    every = settings.SWEEP_INTERVAL_SECONDS if interval is None else interval
    if every <= 0:
        return False
    with _lock:
        if os.getpid() in _started:
            return True
        thread = threading.Thread(target=_sweep_forever, args=(every,), name="abandoned-sweep", daemon=True)
        _started[os.getpid()] = thread
        thread.start()
    return True


def _sweep_forever(every: float) -> None:
    while True:
        try:
            swept = abandoned_sweep()
            if swept:
                log.warning("sweep: closed %s abandoned gateway call(s), %s abandoned event(s); removed %s "
                            "interrupted import(s); queued %s chain(s) the broker had refused or whose run was lost",
                            swept.calls, swept.events, swept.imports, swept.requeued)
        except Exception:  # a database outage must not end the sweeper: the next pass tries again
            log.exception("sweep failed")
        finally:
            connection.close()  # this thread's own connection: none is held between passes
        time.sleep(every)
