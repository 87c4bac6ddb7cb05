"""The embedded worker runs tasks side by side: a task stuck on a slow model endpoint does not hold back the
summaries of other chains queued after it.

The scenario runs in a fresh interpreter: kombu's memory transport and Celery's current app are process-wide,
so workers and queued tasks left by other tests of this process could take or delay the tasks under test."""
from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

from celery import Celery

from flows.pipeline import start_embedded_worker

ROOT = Path(__file__).resolve().parents[2]
WAIT_SECONDS = 10.0


def slow_task_does_not_starve_fast_one() -> None:
    """Raises AssertionError unless a fast task finishes while a slow one still holds a worker thread."""
    app = Celery("embedded-test", broker="memory://", backend="cache+memory://", set_as_current=False)
    app.conf.broker_transport_options = {"polling_interval": 0.05}
    app.conf.task_ignore_result = True
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
        assert slow_started.wait(WAIT_SECONDS), "the slow task never started"
        started = time.monotonic()
        fast.delay()
        assert fast_done.wait(WAIT_SECONDS), "the second task waited for the slow one"
        assert time.monotonic() - started < WAIT_SECONDS and not release.is_set()
    finally:
        release.set()
        worker.stop()


def test_a_slow_task_does_not_starve_the_tasks_queued_after_it() -> None:
    script = ("import django; django.setup(); "  # the pipeline's door loads the models
              "from tests.flows.test_embedded_worker import slow_task_does_not_starve_fast_one as run; run(); "
              "print('ok')")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-2000:]
