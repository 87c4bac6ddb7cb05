"""The embedded worker runs tasks side by side: a task stuck on a slow model endpoint does not hold back the
summaries of other chains queued after it."""
from __future__ import annotations

import threading
import time

import pytest
from celery import Celery

from flows.embedded_worker import start_embedded_worker

WAIT_SECONDS = 10.0


@pytest.fixture
def app():
    app = Celery("embedded-test", broker="memory://", backend="cache+memory://", set_as_current=False)
    app.conf.broker_transport_options = {"polling_interval": 0.05}
    app.conf.task_ignore_result = True
    return app


def test_a_slow_task_does_not_starve_the_tasks_queued_after_it(app):
    slow_started, release, fast_done = threading.Event(), threading.Event(), threading.Event()

    @app.task(name="slow")
    def slow() -> None:
        slow_started.set()
        release.wait(timeout=60)  # a model endpoint that takes its time (up to the call's deadline)

    @app.task(name="fast")
    def fast() -> None:
        fast_done.set()

    worker = start_embedded_worker(app, threads=2)
    try:
        slow.delay()
        assert slow_started.wait(WAIT_SECONDS)
        started = time.monotonic()
        fast.delay()
        assert fast_done.wait(WAIT_SECONDS), "the second task waited for the slow one"
        assert time.monotonic() - started < WAIT_SECONDS and not release.is_set()
    finally:
        release.set()
        worker.stop()
