"""A real Celery worker running in a thread of the current process (the embedded default of docs/design.md).

With the `memory://` broker the producer (web requests, the demo) and this worker share one process, so
queued tasks run here, on a pool of EMBEDDED_WORKER_THREADS threads (default 4): one chain whose model
endpoint is slow (each call is bounded by its total deadline, see flows.pipeline.llm.deadline) holds one thread, and
the other chains' summaries keep running on the others. Tasks are safe to run side by side (the view's
version check settles two runs of one chain), as they are with several worker processes. We build the
plain `WorkController` instead of `app.Worker` because the latter installs signal handlers, which only the
main thread may do (the main thread belongs to Daphne).
"""
from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass, field

from celery import Celery
from celery.worker import WorkController

__all__ = ["EmbeddedWorker", "start_embedded_worker"]

log = logging.getLogger(__name__)

THREADS = int(os.environ.get("EMBEDDED_WORKER_THREADS", 4))
READY_TIMEOUT_SECONDS = 15.0
STOP_TIMEOUT_SECONDS = 10.0
# The memory transport polls its queues; 1 s (kombu's default) would add that much latency to every event.
MEMORY_POLLING_INTERVAL_SECONDS = 0.05


@dataclass
class EmbeddedWorker:
    app: Celery
    controller: WorkController
    thread: threading.Thread
    ready: threading.Event = field(default_factory=threading.Event)

    def stop(self) -> None:
        """Warm shutdown: the running task finishes, nothing new is taken."""
        self.controller.stop(in_sighandler=False)
        self.thread.join(timeout=STOP_TIMEOUT_SECONDS)


def _uses_memory_broker(app: Celery) -> bool:
    return str(app.conf.broker_url or "").startswith("memory://")


def start_embedded_worker(app: Celery | None = None, *, loglevel: str = "WARNING", hostname: str = "embedded@%h",
                          threads: int | None = None) -> EmbeddedWorker:
    """Start a worker thread with a pool of `threads` (EMBEDDED_WORKER_THREADS) and wait until it consumes;
    raises RuntimeError if it does not."""
    if app is None:
        from pentagi_web.celery import app as default_app

        app = default_app
    if _uses_memory_broker(app):
        options = dict(app.conf.broker_transport_options or {})
        options.setdefault("polling_interval", MEMORY_POLLING_INTERVAL_SECONDS)
        app.conf.broker_transport_options = options
    ready = threading.Event()
    # WorkController doesn't send worker_ready itself (the CLI Worker does); its ready_callback tells us.
    controller = app.WorkController(
        hostname=hostname, pool_cls="threads", concurrency=max(1, threads or THREADS), loglevel=loglevel,
        without_heartbeat=True, without_mingle=True, without_gossip=True,
        ready_callback=lambda consumer: ready.set(),
    )
    thread = threading.Thread(target=_run, args=(controller,), name="celery-embedded", daemon=True)
    worker = EmbeddedWorker(app=app, controller=controller, thread=thread, ready=ready)
    thread.start()
    if not ready.wait(READY_TIMEOUT_SECONDS):
        worker.stop()
        raise RuntimeError("the embedded Celery worker did not become ready")
    return worker


def _run(controller: WorkController) -> None:
    try:
        controller.start()
    except Exception:  # a crashed worker must be visible in the log, not silently gone
        log.exception("embedded Celery worker stopped with an error")
