"""Issue 26 items 3 and 6: a chain is never queued twice for the same state, and two runs of one state never
call the model at once (a duplicate in the queue, a task re-delivered after a crash). Interleaved explicitly:
the first run's summarizer blocks until released, so the second run starts while the first holds the state."""
from __future__ import annotations

import json
import threading
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from flows.gateway.threads import gateway_thread
from flows.models import Chain, Outcome, SummaryEvent, Trigger
from flows.pipeline import (
    chain_summarize,
    chains_behind_their_view,
    events_recover_interrupted,
    load_state,
    use_summarizer_factory,
)
from flows.pipeline.runs import event_claim

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]


def _chain_id(django_user_model: Any) -> int:
    user = django_user_model.objects.create_user("claim-user", password="x")
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a penetration tester."}]
    for i in range(6):  # six user turns: PentAGI's passes condense the older sections, one model call each
        messages += [{"role": "user", "content": f"step {i}: scan 10.10.5.{i}"},
                     {"role": "assistant", "content": None, "tool_calls": [{"id": f"c{i}", "type": "function",
                      "function": {"name": "run_command", "arguments": json.dumps({"cmd": f"nmap 10.10.5.{i}"})}}]},
                     {"role": "tool", "tool_call_id": f"c{i}", "content": f"22/tcp open ssh on 10.10.5.{i}"},
                     {"role": "assistant", "content": f"host 10.10.5.{i} has ssh"}]
    return gateway_thread(user=user, messages=messages, model_name="claim-model").chain.pk


def test_a_second_run_of_the_same_state_calls_no_model_while_the_first_runs(django_user_model: Any) -> None:
    chain_id = _chain_id(django_user_model)
    entered, release = threading.Event(), threading.Event()
    asked_by: list[int | None] = []
    lock = threading.Lock()

    def factory(*, event: Any = None, **_: Any) -> Any:
        def summarize(prompt: str) -> str:
            with lock:
                asked_by.append(event.pk if event is not None else None)
            entered.set()
            release.wait(60)
            return "## Summary\nssh found on the hosts"
        return summarize

    first: list[Any] = []
    with use_summarizer_factory(factory):
        runner = threading.Thread(target=lambda: first.append(chain_summarize(chain_id=chain_id, claim=True)))
        runner.start()
        try:
            assert entered.wait(60)  # the first run is inside the model call now
            assert chain_summarize(chain_id=chain_id, claim=True) is None  # the queued duplicate
        finally:
            release.set()
            runner.join(60)
    assert first and first[0] is not None and first[0].outcome == Outcome.OK
    assert set(asked_by) == {first[0].pk}  # every model call belongs to the one run: the duplicate asked none
    assert Chain.objects.get(pk=chain_id).skipped_runs == 1


def test_after_a_crash_the_chain_is_queued_once_on_start(django_user_model: Any) -> None:
    chain_id = _chain_id(django_user_model)  # raw messages no view covers yet
    SummaryEvent.objects.create(chain_id=chain_id, trigger=Trigger.TURN, outcome=Outcome.RUNNING)  # the crashed run
    assert chains_behind_their_view() == [chain_id]
    sent: list[tuple[str, list[int]]] = []
    recovered = events_recover_interrupted(send=lambda name, args: sent.append((name, args)))
    assert sent == [("flows.summarize_chain", [chain_id])] and recovered.summarized == (chain_id,)
    assert chains_behind_their_view(queued=recovered.summarized) == []  # what the start then queues on top


def test_a_claim_older_than_its_lease_is_taken_for_dead(django_user_model: Any) -> None:
    chain_id = _chain_id(django_user_model)
    state = load_state(chain_id)
    dead = SummaryEvent.objects.create(chain_id=chain_id, trigger=Trigger.TURN, outcome=Outcome.RUNNING,
                                       raw_seq_to=state.raw_seq_to)
    assert event_claim(state, snapshot={}, lease_seconds=60) is None  # alive: held
    SummaryEvent.objects.filter(pk=dead.pk).update(created_at=timezone.now() - timedelta(hours=1))
    claimed = event_claim(state, snapshot={}, lease_seconds=60)
    assert claimed is not None and claimed.raw_seq_to == state.raw_seq_to
    assert event_claim(state, snapshot={}, lease_seconds=None) is None  # no expiry: the fresh claim holds
