"""The embedded default over real connections: `manage.py run` (Daphne + in-process Celery worker, memory
broker, in-memory channel layer) serves the API, summarizes off the request path, and pushes the events
to a WebSocket client. Nothing but Python."""
from __future__ import annotations

import pytest

from tests.fakes import free_port
from tests.flows.pipeline_live import PYTHON, Stack, append_and_watch, assert_summarized_live, wait_http


@pytest.fixture
def stack(tmp_path):
    stack = Stack.create(tmp_path)
    yield stack
    stack.close()


def test_run_serves_the_api_and_pushes_events_from_the_embedded_worker(stack):
    creds = stack.provision()
    port = free_port()
    proc = stack.start("run", [PYTHON, "manage.py", "run", "--no-demo", "--host", "127.0.0.1", "--port", str(port)])
    wait_http(f"http://127.0.0.1:{port}/accounts/login/", proc, stack.log("run"))
    frames, chain = append_and_watch(port, creds)
    assert_summarized_live(frames, chain, stack.log("run"))
    output = stack.log("run")
    assert "Celery worker running in-process" in output
    assert "login: user 'demo', password '" in output  # printed once, on first start


def test_run_prints_the_celery_command_when_redis_is_configured(tmp_path):
    """With REDIS_URL the command embeds no worker unless asked (it never needs Redis to start)."""
    stack = Stack.create(tmp_path, REDIS_URL="redis://127.0.0.1:1")
    try:
        port = free_port()
        proc = stack.start("run", [PYTHON, "manage.py", "run", "--no-demo", "--port", str(port)])
        wait_http(f"http://127.0.0.1:{port}/accounts/login/", proc, stack.log("run"))
        assert "celery -A pentagi_web worker" in stack.log("run")
    finally:
        stack.close()
