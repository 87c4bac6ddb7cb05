"""The same flow with PostgreSQL as the database (DATABASE_URL) and Redis between the processes."""
from __future__ import annotations

import secrets

import pytest

from tests.fakes import free_port
from tests.flows.pipeline_live import (
    POSTGRES_ADMIN_URL,
    REDIS_URL,
    Stack,
    append_and_watch,
    assert_summarized_live,
    postgres_up,
    redis_up,
)

pytestmark = [
    pytest.mark.services,
    pytest.mark.skipif(not postgres_up(), reason="PostgreSQL is not answering on 127.0.0.1:5432"),
    pytest.mark.skipif(not redis_up(), reason=f"Redis is not answering at {REDIS_URL}"),
]


@pytest.fixture
def database():
    """A fresh database for this test only, dropped afterwards."""
    import psycopg

    name = f"pgw_pipeline_{secrets.token_hex(6)}"
    with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield f"postgres://postgres@127.0.0.1:5432/{name}"
    with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_the_pipeline_runs_on_postgresql(tmp_path, database):
    stack = Stack.create(tmp_path, DATABASE_URL=database, REDIS_URL=REDIS_URL,
                         REDIS_KEY_PREFIX=f"pgw-test-{secrets.token_hex(6)}:")
    try:
        creds = stack.provision()
        port = free_port()
        stack.start_worker()
        stack.start_daphne(port)
        frames, chain = append_and_watch(port, creds)
        assert_summarized_live(frames, chain, stack.log("worker") + stack.log("daphne"))
    finally:
        stack.close()
