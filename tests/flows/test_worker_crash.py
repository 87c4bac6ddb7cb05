"""A worker killed mid-task (SIGKILL while the summary request hangs): with acks_late the task is
re-delivered to the next worker, which writes exactly one new view, and no raw message is lost."""
from __future__ import annotations

import json
import secrets
import sqlite3
import time

import pytest

from tests.flows.pipeline_live import REDIS_URL, FakeLLM, Stack, redis_up

pytestmark = [
    pytest.mark.services,
    pytest.mark.skipif(not redis_up(), reason=f"Redis is not answering at {REDIS_URL} (scripts/services starts it)"),
]

VISIBILITY_TIMEOUT_SECONDS = 2  # how long an unacked task stays with a (dead) worker before it is restored
TURNS = 6

APPEND = """
import sys
sys.path.insert(0, ".")
from django.contrib.auth import get_user_model
from flows.ingest import agent_create, chain_append, flow_create
from tests.flows.pipeline_support import turn
owner = get_user_model().objects.create_user("crash")
chain = agent_create(flow=flow_create(owner=owner, title="crash"), agent_type="pentester").chains.get()
batch = [{"role": "system", "content": "You are a pentester."}]
for i in range({turns}):
    batch += turn(i)
chain_append(chain=chain, messages=batch)  # one batch, one completed turn: exactly one task queued
print("CHAIN", chain.pk, chain.last_seq)
""".replace("{turns}", str(TURNS))


def _rows(db, sql, *args):
    with sqlite3.connect(db, timeout=10) as conn:
        return conn.execute(sql, args).fetchall()


@pytest.fixture
def llm():
    server = FakeLLM()
    yield server
    server.close()


def test_a_killed_worker_s_task_is_redelivered_and_writes_one_view(tmp_path, llm):
    stack = Stack.create(
        tmp_path, REDIS_URL=REDIS_URL, REDIS_KEY_PREFIX=f"pgw-test-{secrets.token_hex(6)}:",
        CELERY_VISIBILITY_TIMEOUT=str(VISIBILITY_TIMEOUT_SECONDS), LLM_SERVER_URL=llm.url,
        LLM_SERVER_MODEL="fake-model", SUMMARIZER_LAST_SEC_BYTES="2048", SUMMARIZER_MAX_BP_BYTES="1024",
        SUMMARIZER_MAX_QA_SECTIONS="2", SUMMARIZER_MAX_QA_BYTES="4096")
    db = str(tmp_path / "db.sqlite3")
    try:
        stack.manage("migrate", "--noinput")
        stack.start_worker("worker1")
        out = stack.manage("shell", "-c", APPEND)
        chain_id, last_seq = map(int, next(x for x in out.splitlines() if x.startswith("CHAIN")).split()[1:])
        assert llm.first_request.wait(timeout=20), stack.log("worker1")[-3000:]
        stack.kill("worker1")  # mid-task: the summary request is still hanging
        assert _rows(db, "SELECT COUNT(*) FROM flows_chainview WHERE chain_id = ?", chain_id) == [(0,)]
        llm.release.set()
        time.sleep(VISIBILITY_TIMEOUT_SECONDS + 0.5)
        stack.start_worker("worker2")
        deadline = time.monotonic() + 20
        while not _rows(db, "SELECT 1 FROM flows_chainview WHERE chain_id = ?", chain_id):
            assert time.monotonic() < deadline, stack.log("worker2")[-3000:]
            time.sleep(0.2)
        time.sleep(1)  # a duplicate delivery, if any, would write its view now
        views = _rows(db, "SELECT version, raw_seq_to, lineage FROM flows_chainview WHERE chain_id = ?", chain_id)
        assert [(v, seq_to) for v, seq_to, _ in views] == [(1, last_seq)]
        assert _rows(db, "SELECT COUNT(*) FROM flows_message WHERE chain_id = ?", chain_id) == [(last_seq,)]
        covered = {seq for lineage in json.loads(views[0][2]) for seq in lineage}
        assert covered == set(range(1, last_seq + 1))  # every raw message is represented in the view
        outcomes = dict(_rows(db, "SELECT outcome, COUNT(*) FROM flows_summaryevent WHERE chain_id = ? "
                                  "GROUP BY outcome", chain_id))
        assert outcomes.get("ok") == 1 and "running" not in outcomes, outcomes
        assert "flows.summarize_chain" in stack.log("worker2")
    finally:
        stack.close()
