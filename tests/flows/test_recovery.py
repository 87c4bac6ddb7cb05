"""Runs left RUNNING by a stopped worker: on start a manual compaction is queued again and finished once; any
other run is closed as failed with the reason. In process (the service) and across a real restart of
`manage.py run` (embedded worker, memory broker: the queued task died with the process)."""
from __future__ import annotations

import json
import secrets
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from flows.config import settings_for
from flows.gateway import calls_abandoned_after_seconds, gateway_calls_close_interrupted
from flows.gateway.recovery import CALL_DEADLINE_MARGIN_SECONDS, CALL_INTERRUPTED_REASON
from flows.models import CallStatus, GatewayCall, Outcome, ProviderConfig, SummaryEvent, Trigger
from flows.pipeline import events_recover_interrupted
from flows.pipeline.recovery import INTERRUPTED_REASON
from tests.fakes import free_port
from tests.flows.pipeline_live import PYTHON, REDIS_URL, Stack, redis_up, wait_http

RUNNING_FOR_SECONDS = 30


def _event(chain, trigger: str, outcome: str = Outcome.RUNNING) -> SummaryEvent:
    return SummaryEvent.objects.create(chain=chain, trigger=trigger, outcome=outcome)


@pytest.mark.django_db
def test_it_requeues_manual_compactions_and_closes_the_other_runs(make_chain, tool_round):
    chain = make_chain(tool_round)
    manual, turn, window = _event(chain, Trigger.MANUAL), _event(chain, Trigger.TURN), _event(chain, Trigger.WINDOW)
    done = _event(chain, Trigger.TURN, Outcome.OK)
    sent: list[tuple[str, list[int]]] = []
    recovered = events_recover_interrupted(send=lambda name, args: sent.append((name, args)))
    assert (recovered.requeued_compactions, recovered.closed_as_failed) == (1, 2)
    assert sent == [("flows.compact_chain", [chain.pk, manual.pk]), ("flows.summarize_chain", [chain.pk])]
    for event in (turn, window):
        event.refresh_from_db()
        assert (event.outcome, event.reason) == (Outcome.FAILED, INTERRUPTED_REASON) and event.finished_at
    manual.refresh_from_db(), done.refresh_from_db()
    assert manual.outcome == Outcome.RUNNING and done.outcome == Outcome.OK  # the re-queued task closes it


@pytest.mark.django_db
def test_with_separate_workers_only_abandoned_runs_count(make_chain, tool_round):
    chain = make_chain(tool_round)
    fresh, old = _event(chain, Trigger.TURN), _event(chain, Trigger.TURN)
    SummaryEvent.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(hours=1))
    recovered = events_recover_interrupted(older_than_seconds=600, send=lambda name, args: None)
    assert recovered.closed_as_failed == 1
    fresh.refresh_from_db()
    assert fresh.outcome == Outcome.RUNNING


@pytest.mark.django_db
def test_gateway_calls_left_running_are_closed_when_older_than_any_upstream_could_take(make_chain, settings):
    chain = make_chain()
    fresh, old, done = (GatewayCall.objects.create(chain=chain, user=chain.agent.flow.owner, model="m")
                        for _ in range(3))
    GatewayCall.objects.filter(pk=done.pk).update(status=CallStatus.OK)
    GatewayCall.objects.filter(pk__in=[old.pk, done.pk]).update(created_at=timezone.now() - timedelta(hours=1))
    ProviderConfig.objects.create(name="slow", kind="openai", timeout_seconds=900)
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:6379/0"  # other servers may still be waiting upstream
    deadline = settings_for(profile=chain.agent.profile).summary_deadline_seconds  # the call may summarize first
    assert calls_abandoned_after_seconds() == 900 + deadline + CALL_DEADLINE_MARGIN_SECONDS
    assert gateway_calls_close_interrupted(older_than_seconds=calls_abandoned_after_seconds()) == 1
    states = dict(GatewayCall.objects.values_list("pk", "status"))
    assert states == {fresh.pk: CallStatus.RUNNING, old.pk: CallStatus.FAILED, done.pk: CallStatus.OK}
    assert GatewayCall.objects.get(pk=old.pk).error == CALL_INTERRUPTED_REASON
    settings.CELERY_BROKER_URL = "memory://"  # one server process: whatever it ran died with it
    assert gateway_calls_close_interrupted(older_than_seconds=calls_abandoned_after_seconds()) == 1


CRASHED_RUN = """
import json
from flows.models import Outcome, SummaryEvent, Trigger
from flows.ingest import agent_create, chain_append, flow_create
from django.contrib.auth import get_user_model
owner = get_user_model().objects.create_user("restart")
chain = agent_create(flow=flow_create(owner=owner, title="restart"), agent_type="pentester").chains.get()
chain_append(chain=chain, messages=MESSAGES)
manual = SummaryEvent.objects.create(chain=chain, trigger=Trigger.MANUAL, outcome=Outcome.RUNNING)
turn = SummaryEvent.objects.create(chain=chain, trigger=Trigger.TURN, outcome=Outcome.RUNNING)
print("EVENTS " + json.dumps([manual.pk, turn.pk]))
"""
OUTCOMES = """
import json
from flows.models import SummaryEvent
print("OUTCOMES " + json.dumps({e.pk: [e.outcome, e.reason] for e in SummaryEvent.objects.all()}))
"""


def _outcomes(stack: Stack) -> dict[str, list[str]]:
    line = next(x for x in stack.manage("shell", "-c", OUTCOMES).splitlines() if x.startswith("OUTCOMES "))
    return json.loads(line.removeprefix("OUTCOMES "))


def test_a_restart_finishes_a_manual_compaction_left_running(tmp_path, tool_round):
    stack = Stack.create(tmp_path)
    try:
        stack.manage("migrate", "--noinput")
        script = CRASHED_RUN.replace("MESSAGES", repr(tool_round))
        out = stack.manage("shell", "-c", script)  # the process that queued the task is gone: so is its queue
        manual_id, turn_id = json.loads(next(x for x in out.splitlines() if x.startswith("EVENTS ")).split(" ", 1)[1])
        port = free_port()
        proc = stack.start("run", [PYTHON, "manage.py", "run", "--no-demo", "--port", str(port)])
        wait_http(f"http://127.0.0.1:{port}/accounts/login/", proc, stack.log("run"))
        deadline = time.monotonic() + RUNNING_FOR_SECONDS
        while _outcomes(stack)[str(manual_id)][0] == Outcome.RUNNING and time.monotonic() < deadline:
            time.sleep(0.5)
        outcomes = _outcomes(stack)
        assert outcomes[str(manual_id)][0] in (Outcome.OK, Outcome.SKIPPED), (outcomes, stack.log("run")[-2000:])
        assert outcomes[str(turn_id)] == [Outcome.FAILED, INTERRUPTED_REASON]
        assert "1 manual compaction(s) queued again, 1 interrupted run(s) closed as failed" in stack.log("run")
    finally:
        stack.close()


ABANDONED_RUN = """
import json
from datetime import timedelta
from django.utils import timezone
from flows.models import Outcome, SummaryEvent, Trigger
from flows.ingest import agent_create, flow_create
from django.contrib.auth import get_user_model
owner = get_user_model().objects.create_user("worker-restart")
chain = agent_create(flow=flow_create(owner=owner, title="restart"), agent_type="pentester").chains.get()
old = SummaryEvent.objects.create(chain=chain, trigger=Trigger.TURN, outcome=Outcome.RUNNING)
young = SummaryEvent.objects.create(chain=chain, trigger=Trigger.TURN, outcome=Outcome.RUNNING)
SummaryEvent.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(hours=1))
print("EVENTS " + json.dumps([old.pk, young.pk]))
"""


@pytest.mark.services
@pytest.mark.skipif(not redis_up(), reason=f"Redis is not answering at {REDIS_URL}")
def test_a_worker_process_closes_only_abandoned_runs_when_it_is_ready(tmp_path):
    stack = Stack.create(tmp_path, REDIS_URL=REDIS_URL, REDIS_KEY_PREFIX=f"pgw-test-{secrets.token_hex(6)}:")
    try:
        stack.manage("migrate", "--noinput")
        out = stack.manage("shell", "-c", ABANDONED_RUN)
        old_id, young_id = json.loads(next(x for x in out.splitlines() if x.startswith("EVENTS ")).split(" ", 1)[1])
        stack.start_worker()
        deadline = time.monotonic() + RUNNING_FOR_SECONDS
        while _outcomes(stack)[str(old_id)][0] == Outcome.RUNNING and time.monotonic() < deadline:
            time.sleep(0.5)
        outcomes = _outcomes(stack)
        assert outcomes[str(old_id)] == [Outcome.FAILED, INTERRUPTED_REASON], stack.log("worker")[-2000:]
        assert outcomes[str(young_id)][0] == Outcome.RUNNING  # its task may still come back by re-delivery
        assert "0 manual compaction(s) queued again, 1 interrupted run(s) closed as failed" in stack.log("worker")
    finally:
        stack.close()
