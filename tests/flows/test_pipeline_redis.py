"""The scale-out column over real connections: a Celery worker process on the Redis broker summarizes a
chain appended through the API served by a separate Daphne process, and a WebSocket client connected
through channels-redis receives message.appended and view.updated."""
from __future__ import annotations

import secrets

import pytest

from tests.fakes import free_port
from tests.flows.pipeline_live import REDIS_URL, Stack, append_and_watch, assert_summarized_live, redis_up

pytestmark = [
    pytest.mark.services,
    pytest.mark.skipif(not redis_up(), reason=f"Redis is not answering at {REDIS_URL} (scripts/services starts it)"),
]


@pytest.fixture
def stack(tmp_path):
    stack = Stack.create(tmp_path, REDIS_URL=REDIS_URL, REDIS_KEY_PREFIX=f"pgw-test-{secrets.token_hex(6)}:")
    yield stack
    stack.close()


def test_a_worker_process_summarizes_and_events_cross_processes_through_redis(stack):
    creds = stack.provision()  # a file SQLite database shared by every process of the stack
    port = free_port()
    stack.start_worker()
    stack.start_daphne(port)
    frames, chain = append_and_watch(port, creds)
    assert_summarized_live(frames, chain, stack.log("worker") + stack.log("daphne"))
    assert "flows.summarize_chain" in stack.log("worker")  # it ran in the worker process, not in Daphne
