"""Issue 26 item 5 against the deployments it was found on: nothing is left "running" or half-written.

Both deployments (`manage.py run` on SQLite; PostgreSQL + Redis + plain Daphne + a separate worker) with a scripted
upstream. Found there: upstream answers the chain cannot hold went to the agent as 200 and their calls stayed
"running" forever (plain Daphne never closed them); a server killed mid-import left a flow with rows and
`last_seq=0`; with Redis down, appends said 201 and dropped their summarization, and a compaction was a 500 that
left its event running. Stuck rows are read from the database itself, from outside the server; the server's
periodic sweep (SWEEP_INTERVAL_SECONDS, short here) is what must close them, with no restart.
"""
from __future__ import annotations

import contextlib
import json
import sqlite3
import subprocess
import time
from collections.abc import Callable, Iterator
from typing import Any

import openai
import pytest

from flows.ingest.append import MAX_MESSAGE_BYTES
from tests.fakes import free_port
from tests.gateway.agent_loop import TOOLS
from tests.gateway.upstream_fake import MODEL, FakeUpstream
from tests.reliability.deployments import DEPLOYMENTS, Deployment, deployment, post

pytestmark = [pytest.mark.services, pytest.mark.timeout(300)]
WAIT_SECONDS = 60
SWEEP_EVERY = "0.3"

UNSTORABLE = {
    "lone surrogate in content": {"role": "assistant", "content": "scan done \ud800"},
    "NUL in name": {"role": "assistant", "content": "done", "name": "pent\x00ester"},
    "name over 200 characters": {"role": "assistant", "content": "done", "name": "n" * 201},
    "content over 4 MiB": {"role": "assistant", "content": "x" * (MAX_MESSAGE_BYTES + 1)},
}

# What a kill leaves, made in the deployment's own database: a call and a run nothing will ever finish, and an
# import whose first chunk is in while its chain's last_seq is still 0; all started long ago.
STUCK = """
import json
from datetime import datetime, timezone as tz
from django.contrib.auth import get_user_model
from flows.engine import import_chain
from flows.ingest import agent_create, flow_create
from flows.ingest.append import build_rows
from flows.models import GatewayCall, Message, SummaryEvent, Trigger
long_ago = datetime(2020, 1, 1, tzinfo=tz.utc)
user = get_user_model().objects.get(username="pipeline")
chain = agent_create(flow=flow_create(owner=user, title="lived"), agent_type="pentester").chains.get()
call = GatewayCall.objects.create(chain=chain, user=user, model="m")
event = SummaryEvent.objects.create(chain=chain, trigger=Trigger.MANUAL)
half = agent_create(flow=flow_create(owner=user, title="Imported chain"), agent_type="primary_agent").chains.get()
batch = import_chain({"messages": [{"role": "user", "content": f"scan {n}"} for n in range(21)]}, "openai")
Message.objects.bulk_create(build_rows(half, batch, {}, ""))
GatewayCall.objects.filter(pk=call.pk).update(created_at=long_ago)
SummaryEvent.objects.filter(pk=event.pk).update(created_at=long_ago)
Message.objects.filter(chain=half).update(created_at=long_ago)
print("STUCK " + json.dumps({"call": call.pk, "event": event.pk, "half_flow": half.agent.flow_id}))
"""


def _rows(d: Deployment, sql: str) -> list[tuple[Any, ...]]:
    """Rows read straight from the deployment's database (SQLite file or PostgreSQL), not through the server."""
    url = d.stack.env.get("DATABASE_URL", "")
    if url.startswith("postgres"):
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            return list(conn.execute(sql).fetchall())
    with contextlib.closing(sqlite3.connect(d.stack.var_dir / "db.sqlite3", timeout=30)) as conn:
        return conn.execute(sql).fetchall()


def _until(what: Callable[[], Any], why: str) -> Any:
    deadline = time.monotonic() + WAIT_SECONDS
    while not (found := what()):
        assert time.monotonic() < deadline, why
        time.sleep(0.1)  # polling a condition the server makes true, not waiting for time to pass
    return found


def _api(d: Deployment, method: str, path: str, body: object = None) -> tuple[int, dict]:
    status, answer = post(d.base, path, json.dumps(body).encode() if body is not None else b"", {
        "Authorization": f"Bearer {d.token}", "Content-Type": "application/json"}, method=method)
    return status, json.loads(answer) if answer else {}


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeUpstream]:
    fake = FakeUpstream(window_tokens=100_000)
    yield fake
    fake.close()


@pytest.fixture(scope="module", params=DEPLOYMENTS)
def served(request, tmp_path_factory, upstream) -> Iterator[Deployment]:
    with deployment(request.param, tmp_path_factory.mktemp(request.param), worker=True,
                    LLM_SERVER_URL=upstream.url, LLM_SERVER_KEY="sk-up", LLM_SERVER_MODEL=MODEL,
                    LLM_SERVER_CONTEXT_TOKENS="100000", SWEEP_INTERVAL_SECONDS=SWEEP_EVERY) as d:
        yield d


@pytest.mark.parametrize("kind", list(UNSTORABLE))
def test_an_upstream_answer_the_chain_cannot_hold_reaches_the_agent_and_its_call_ends_failed(served, upstream,
                                                                                              kind):
    upstream.answers[:] = [UNSTORABLE[kind]]
    client = openai.OpenAI(base_url=served.base + "/v1", api_key=served.token, max_retries=0, timeout=60)
    raw = client.chat.completions.with_raw_response.create(
        model=MODEL, messages=[{"role": "system", "content": f"You test {kind}."}, {"role": "user", "content": "go"}],
        tools=TOOLS)  # with tools: the scripted agent answers (without, the fake upstream writes summaries)
    assert raw.http_response.status_code == 200
    assert raw.parse().choices[0].message.content is not None  # the agent has its answer
    chain_id = int(raw.headers["X-Chain-Id"])
    status, error, seq = _until(lambda: [r for r in _rows(served, "SELECT status, error, response_seq FROM "
                                                           f"flows_gatewaycall WHERE chain_id = {chain_id}")
                                         if r[0] != "running"], f"the call of chain {chain_id} stayed running")[0]
    assert status == "failed" and error.startswith("answer not storable: "), (status, error)
    assert seq is None and _rows(served, f"SELECT last_seq FROM flows_chain WHERE id = {chain_id}") == [(2,)]


def test_what_a_kill_left_running_or_half_written_is_closed_by_the_running_server(served):
    out = served.stack.manage("shell", "-c", STUCK)
    stuck = json.loads(next(x for x in out.splitlines() if x.startswith("STUCK "))[6:])
    call = _until(lambda: _rows(served, f"SELECT status, error FROM flows_gatewaycall WHERE id = {stuck['call']} "
                                        "AND status <> 'running'"), "the abandoned call stayed running")
    assert call[0][0] == "failed" and call[0][1].startswith("abandoned: ")
    event = _until(lambda: _rows(served, f"SELECT outcome, reason FROM flows_summaryevent WHERE id = "
                                         f"{stuck['event']} AND outcome <> 'running'"), "the event stayed running")
    assert event[0][0] == "failed" and event[0][1].startswith("abandoned: ")
    _until(lambda: not _rows(served, f"SELECT id FROM flows_flow WHERE id = {stuck['half_flow']}"),
           "the half-written import is still there")
    status, _ = _api(served, "GET", f"/api/flows/{stuck['half_flow']}")
    assert status == 404


def _turn(n: int) -> list[dict]:
    return [{"role": "user", "content": f"scan host {n}"}, {"role": "assistant", "content": f"host {n} is up"}]


@contextlib.contextmanager
def _redis_on(port: int) -> Iterator[None]:
    """A real Redis on `port`: the broker coming back."""
    proc = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _events(d: Deployment, chain_id: int) -> list[dict]:
    return _api(d, "GET", f"/api/chains/{chain_id}/events")[1]["events"]


def test_with_redis_down_appends_say_so_compaction_is_a_503_and_the_summaries_follow_once_it_is_back(tmp_path,
                                                                                                      upstream):
    port = free_port()  # nothing listens there: every connection is refused
    broker = f"redis://127.0.0.1:{port}/0"
    with deployment("services", tmp_path, REDIS_URL=broker, SWEEP_INTERVAL_SECONDS=SWEEP_EVERY,
                    LLM_SERVER_URL=upstream.url, LLM_SERVER_KEY="sk-up", LLM_SERVER_MODEL=MODEL,
                    LLM_SERVER_CONTEXT_TOKENS="100000") as d:
        _, flow = _api(d, "POST", "/api/flows", {"title": "no broker"})
        _, agent = _api(d, "POST", f"/api/flows/{flow['id']}/agents", {"agent_type": "pentester"})
        chain_id = agent["chain_id"]
        status, appended = _api(d, "POST", f"/api/chains/{chain_id}/messages", {"messages": _turn(1)})
        assert status == 201 and appended["turn_completed"]
        assert appended["summarization"] == "not queued: broker unreachable"
        status, refused = _api(d, "POST", f"/api/chains/{chain_id}/compact", {"instructions": ""})
        assert status == 503 and refused["error"] == "broker_unreachable", refused
        _, listed = _api(d, "GET", f"/api/chains/{chain_id}/events")
        events = {(e["trigger"], e["outcome"], e["reason"]) for e in listed["events"]}
        assert events == {("turn", "failed", "not queued: broker unreachable"),
                          ("manual", "failed", "not queued: broker unreachable")}
        # the gateway publishes from its outbox thread, after the agent has its answer: the refusal is recorded
        upstream.answers[:] = [{"role": "assistant", "content": "port 22 is open"}]
        client = openai.OpenAI(base_url=d.base + "/v1", api_key=d.token, max_retries=0, timeout=60)
        raw = client.chat.completions.with_raw_response.create(
            model=MODEL, messages=[{"role": "system", "content": "You scan."}, {"role": "user", "content": "go"}],
            tools=TOOLS, extra_headers={"X-Gateway-Mode": "observe"})
        gateway_chain = int(raw.headers["X-Chain-Id"])
        _until(lambda: [e for e in _events(d, gateway_chain) if e["reason"] == "not queued: broker unreachable"],
               "the gateway's refused summarization was not recorded")
        with _redis_on(port):
            d.stack.start_worker()
            done = _until(lambda: [e for e in _events(d, chain_id)
                                   if e["trigger"] == "turn" and e["reason"].endswith("once the broker answered")],
                          "the sweep did not queue the refused summarization again")
            _until(lambda: [e for e in _events(d, gateway_chain) if e["reason"].endswith("once the broker answered")],
                   "the sweep did not queue the gateway chain's summarization again")
            assert done[0]["outcome"] == "failed"  # the record of the refusal stays, saying what happened next
            _until(lambda: _rows(d, f"SELECT id FROM flows_chainview WHERE chain_id = {chain_id}"),
                   "the chain was not summarized once the broker was back")
            status, appended = _api(d, "POST", f"/api/chains/{chain_id}/messages", {"messages": _turn(2)})
            assert (status, appended["summarization"]) == (201, "queued")
