"""Issue 26 item 5, in process: every path that left a call, an event or an import "running" or half-written ends.

Each stuck state is made as the defect left it (an upstream answer the chain cannot hold, an exception after the
answer, rows of a killed import, runs nothing will finish) and its end state asserted; the sweep's clock is
injected (`now`), so nothing is aged by sleeping. The live deployments are in tests/reliability/.
"""
from __future__ import annotations

import asyncio
import json
import threading
import time
from datetime import timedelta
from typing import Any

import pytest
from django.db import DatabaseError, IntegrityError
from django.test import RequestFactory
from django.utils import timezone

from flows.engine import import_chain
from flows.gateway import abandoned_sweep, views
from flows.gateway.calls import record_or_fail
from flows.gateway.records import gateway_call_complete
from flows.gateway.recovery import CALL_ABANDONED_REASON, CALL_DEADLINE_MARGIN_SECONDS, longest_call_seconds
from flows.ingest import chain_append, chain_import, imports_remove_interrupted
from flows.ingest.append import MAX_MESSAGE_BYTES, build_rows
from flows.ingest.importing import IMPORT_STALLED_SECONDS
from flows.models import (
    CallStatus,
    Chain,
    Flow,
    GatewayCall,
    Message,
    Outcome,
    ProviderConfig,
    ProviderKind,
    SummarizerSettings,
    SummaryEvent,
    Trigger,
)
from flows.pipeline.recovery import ABANDONED_REASON

UNSTORABLE = {
    "lone surrogate in content": {"role": "assistant", "content": "scan done \ud800"},
    "NUL in name": {"role": "assistant", "content": "done", "name": "pent\x00ester"},
    "name over 200 characters": {"role": "assistant", "content": "done", "name": "n" * 201},
    "content over 4 MiB": {"role": "assistant", "content": "x" * (MAX_MESSAGE_BYTES + 1)},
}


def _call_on_a_chain_awaiting_its_answer(make_chain) -> tuple[GatewayCall, Chain]:
    chain = make_chain([{"role": "system", "content": "You are a pentester."}, {"role": "user", "content": "scan"}])
    Chain.objects.filter(pk=chain.pk).update(head_seq=chain.last_seq)  # the gateway threaded this history
    chain.refresh_from_db()
    return GatewayCall.objects.create(chain=chain, user=chain.agent.flow.owner, model="m"), chain


def _complete(call: GatewayCall, chain: Chain, answer: dict[str, Any], **kw: Any) -> GatewayCall:
    return gateway_call_complete(call=call, expected_head=chain.head_hash, history=None, answer=answer,
                                 status=CallStatus.OK, http_status=200, latency_ms=5, **kw)


@pytest.mark.django_db
def test_a_storable_answer_is_appended_and_its_call_ends_ok(make_chain):
    call, chain = _call_on_a_chain_awaiting_its_answer(make_chain)
    closed = _complete(call, chain, {"role": "assistant", "content": "22/tcp is open"})
    assert (closed.status, closed.response_seq, closed.error) == (CallStatus.OK, 3, "")


@pytest.mark.django_db
@pytest.mark.parametrize("kind", list(UNSTORABLE))
def test_an_answer_the_chain_cannot_hold_ends_its_call_failed_with_why_and_appends_nothing(make_chain, kind):
    call, chain = _call_on_a_chain_awaiting_its_answer(make_chain)
    _complete(call, chain, UNSTORABLE[kind])
    row = GatewayCall.objects.get(pk=call.pk)
    assert row.status == CallStatus.FAILED and row.finished_at is not None
    assert row.error.startswith("answer not storable: "), row.error
    assert row.http_status == 200  # the agent got its answer; only our record of it failed
    assert Message.objects.filter(chain=chain).count() == 2 and row.response_seq is None


@pytest.mark.django_db
def test_an_exception_after_the_upstream_answered_still_ends_the_call(make_chain):
    call, chain = _call_on_a_chain_awaiting_its_answer(make_chain)

    def boom(_call: GatewayCall) -> None:
        raise DatabaseError("the response store refused the row")

    record_or_fail(call.pk, lambda: _complete(call, chain, {"role": "assistant", "content": "done"}, then=boom))
    row = GatewayCall.objects.get(pk=call.pk)
    assert row.status == CallStatus.FAILED
    assert row.error == "record not written: DatabaseError: the response store refused the row"
    assert Message.objects.filter(chain=chain).count() == 2  # the record's transaction wrote nothing


@pytest.mark.django_db
def test_the_sweep_closes_calls_and_events_older_than_any_deadline_and_nothing_younger(make_chain, settings):
    settings.CELERY_BROKER_URL = "memory://"
    chain = make_chain()
    call = GatewayCall.objects.create(chain=chain, user=chain.agent.flow.owner, model="m")
    done = GatewayCall.objects.create(chain=chain, user=chain.agent.flow.owner, model="m", status=CallStatus.OK)
    turn = SummaryEvent.objects.create(chain=chain, trigger=Trigger.TURN)
    manual = SummaryEvent.objects.create(chain=chain, trigger=Trigger.MANUAL)
    cutoff = longest_call_seconds()
    assert not abandoned_sweep(now=timezone.now() + timedelta(seconds=cutoff - 5))  # might still be running
    swept = abandoned_sweep(now=timezone.now() + timedelta(seconds=cutoff + 1))
    assert (swept.calls, swept.events) == (1, 2)
    assert GatewayCall.objects.get(pk=call.pk).error == CALL_ABANDONED_REASON
    assert GatewayCall.objects.get(pk=done.pk).status == CallStatus.OK
    for event in (turn, manual):
        event.refresh_from_db()
        assert (event.outcome, event.reason) == (Outcome.FAILED, ABANDONED_REASON) and event.finished_at
    assert not abandoned_sweep(now=timezone.now() + timedelta(days=1))  # each row is closed once


@pytest.mark.django_db
def test_a_call_still_summarizing_within_its_deadline_is_not_abandoned(make_chain, settings):
    settings.CELERY_BROKER_URL = "memory://"
    chain = make_chain()
    ProviderConfig.objects.create(name="slow", kind=ProviderKind.OPENAI, base_url="http://127.0.0.1:9/v1",
                                  model="m", timeout_seconds=100)
    SummarizerSettings.objects.create(profile=chain.agent.profile, flow=chain.agent.flow,
                                      summary_deadline_seconds=600)
    GatewayCall.objects.create(chain=chain, user=chain.agent.flow.owner, model="m")
    # 100 s upstream + 600 s summarizing: a call 11 minutes old may still be running
    assert longest_call_seconds() == 100 + 600 + CALL_DEADLINE_MARGIN_SECONDS
    assert not abandoned_sweep(now=timezone.now() + timedelta(seconds=100 + 600)).calls
    assert abandoned_sweep(now=timezone.now() + timedelta(seconds=100 + 600 + CALL_DEADLINE_MARGIN_SECONDS + 1)).calls
    SummarizerSettings.objects.filter(flow=chain.agent.flow).update(summary_deadline_seconds=0)  # no deadline
    assert longest_call_seconds() == 100 + 3600 + CALL_DEADLINE_MARGIN_SECONDS  # the setting's largest value


@pytest.mark.django_db
def test_with_a_redis_broker_events_wait_twice_the_visibility_timeout(make_chain, settings):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:6379/0"  # a killed task comes back within one timeout
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}
    chain = make_chain()
    SummaryEvent.objects.create(chain=chain, trigger=Trigger.TURN)
    GatewayCall.objects.create(chain=chain, user=chain.agent.flow.owner, model="m")
    swept = abandoned_sweep(now=timezone.now() + timedelta(seconds=longest_call_seconds() + 1))
    assert (swept.calls, swept.events) == (1, 0)
    assert abandoned_sweep(now=timezone.now() + timedelta(seconds=2 * 3600 + 1)).events == 1


def _transcript(rounds: int) -> list[dict[str, Any]]:
    messages = [{"role": "system", "content": "You are a pentester."}]
    for n in range(rounds):
        messages += [{"role": "user", "content": f"scan 10.0.0.{n}"}, {"role": "assistant", "content": f"{n} ok"}]
    return messages


def _killed_import(user, make_agent, rows: int) -> Chain:
    """The rows a server killed mid-import leaves: the first chunks committed, last_seq never moved (still 0)."""
    chain = make_agent(title="Imported chain").chains.get(is_active=True)
    written = build_rows(chain, import_chain({"messages": _transcript(rows)}, "openai"), {}, "")[:rows]
    Message.objects.bulk_create(written)
    return chain


@pytest.mark.django_db
def test_a_killed_import_answers_no_append_until_the_sweep_removes_its_half_flow(user, make_agent, make_chain,
                                                                                   tool_round):
    half = _killed_import(user, make_agent, rows=21)
    whole = chain_import(owner=user, data={"messages": _transcript(30)}, fmt="openai")
    empty = make_chain()  # a new agent's chain: last_seq 0 and no rows, nothing half about it
    lived = make_chain(tool_round)
    with pytest.raises(IntegrityError):  # the defect: seq 1 is taken while last_seq says 0
        chain_append(chain=half, messages=[{"role": "user", "content": "go on"}])
    soon = timezone.now() + timedelta(seconds=IMPORT_STALLED_SECONDS - 5)
    assert imports_remove_interrupted(now=soon) == 0  # an import still writing its chunks is left alone
    later = timezone.now() + timedelta(seconds=IMPORT_STALLED_SECONDS + 1)
    assert abandoned_sweep(now=later).imports == 1
    assert not Flow.objects.filter(pk=half.agent.flow_id).exists()
    assert not Message.objects.filter(chain_id=half.pk).exists()
    for kept in (whole, empty, lived):
        assert Chain.objects.filter(pk=kept.pk).exists()
    assert Message.objects.filter(chain=whole).count() == whole.last_seq == 61
    chain_append(chain=lived, messages=[{"role": "user", "content": "next"}])  # the others append as before


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_an_agent_hanging_up_while_its_call_is_admitted_leaves_no_call_running(user, api_token, monkeypatch):
    """The admission's thread hop writes the call row; a hang-up cancels the view meanwhile (GatewayHandler does
    that on the client's disconnect), so no later step of the view would ever close it."""
    ProviderConfig.objects.create(name="up", kind=ProviderKind.OPENAI, base_url="http://127.0.0.1:9/v1", model="m",
                                  is_default=True)
    admitted, release = threading.Event(), threading.Event()
    real_prepare = views.prepare_call

    def prepare_then_stall(*args: Any, **kwargs: Any) -> Any:
        prepared = real_prepare(*args, **kwargs)  # the call row exists from here on
        admitted.set()
        assert release.wait(30)
        return prepared

    monkeypatch.setattr(views, "prepare_call", prepare_then_stall)
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "scan 10.0.0.1"}]})
    request = RequestFactory().post("/v1/chat/completions", body, content_type="application/json",
                                    HTTP_AUTHORIZATION=f"Bearer {api_token}")
    serving = asyncio.ensure_future(views.chat_completions(request))
    assert await asyncio.to_thread(admitted.wait, 30)
    serving.cancel()  # the agent hung up
    with pytest.raises(asyncio.CancelledError):
        await serving
    release.set()
    rows = GatewayCall.objects.values_list("status", "http_status", "error")
    deadline = time.monotonic() + 30
    while await rows.filter(status=CallStatus.RUNNING).aexists() or not await rows.aexists():
        assert time.monotonic() < deadline, "the call stayed running"
        await asyncio.sleep(0.05)  # waiting on the condition (the close runs in a thread hop), not on time
    assert [row async for row in rows] == [(CallStatus.CANCELLED, 499, views.HUNG_UP_ADMITTING)]
