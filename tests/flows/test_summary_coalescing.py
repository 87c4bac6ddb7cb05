"""Issue 25 item 3: after-turn summarizations coalesce. While a chain's run is queued and not started, further turns
queue nothing (the run loads the newest state when it starts); a turn appended while the run already runs queues
one more; a flag a lost task left behind is re-queued by the start recovery and the sweep. Runs on SQLite and, in
scripts/test's second stage, on PostgreSQL. The worker is "held" by not running the queued task until asked."""
from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection, transaction

from flows.core import BrokerUnreachable
from flows.gateway.recovery import longest_call_seconds
from flows.gateway.sweep import abandoned_sweep
from flows.ingest import batch_validate, chain_append, chain_append_locked
from flows.models import Chain
from flows.pipeline import events_recover_interrupted, summaries_requeue_stale, tasks, use_summarizer_factory
from tests.app_fixtures import call

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]


def _turn(i: int) -> list[dict[str, Any]]:
    """One 4-message agent turn: the task, a tool call, its result, the answer."""
    call_id = f"call_{i:024d}"
    return [{"role": "user", "content": f"step {i}: scan 10.0.0.{i % 250}"},
            {"role": "assistant", "content": None, "tool_calls": [call(call_id)]},
            {"role": "tool", "tool_call_id": call_id, "content": f"{i}/tcp open"},
            {"role": "assistant", "content": f"port {i} is open"}]


@pytest.fixture
def queued(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The chain ids handed to the broker; nothing runs them (the worker is held) until the test does."""
    sent: list[int] = []
    monkeypatch.setattr(tasks.summarize_chain_task, "delay", lambda chain_id: sent.append(chain_id))
    return sent


@pytest.fixture
def summarizer() -> Iterator[None]:
    with use_summarizer_factory(lambda **_: (lambda prompt: "## Summary\nports found")):
        yield


def _covered_seq(chain_id: int) -> int:
    view = Chain.objects.get(pk=chain_id).latest_view()
    return view.raw_seq_to if view else 0


def test_a_burst_of_turns_queues_one_run_which_covers_the_last_turn(make_chain, tool_round, queued, summarizer):
    chain = make_chain()
    said = [chain_append(chain=chain.pk, messages=tool_round).summarization]
    said += [chain_append(chain=chain.pk, messages=_turn(i)).summarization for i in range(1, 20)]
    assert said == ["queued"] + ["coalesced"] * 19
    assert queued == [chain.pk]  # one run for twenty turns, not twenty
    last_seq = Chain.objects.get(pk=chain.pk).last_seq
    tasks.summarize_chain_task(chain.pk)  # the held worker runs the one queued task
    assert _covered_seq(chain.pk) == last_seq
    assert Chain.objects.get(pk=chain.pk).summary_queued_at is None
    assert chain_append(chain=chain.pk, messages=_turn(20)).summarization == "queued"  # the next turn queues again
    assert queued == [chain.pk, chain.pk]


def test_a_turns_run_waits_summary_delay_seconds_and_the_turns_meanwhile_coalesce_into_it(
        make_chain, tool_round, monkeypatch, settings):
    """SUMMARY_DELAY_SECONDS: the run is published with that countdown (the worker holds it), and until it starts
    the chain's flag says a run is waiting, so the turns appended meanwhile queue nothing."""
    settings.SUMMARY_DELAY_SECONDS = 0.7
    published: list[tuple[tuple[int, ...], dict[str, Any]]] = []
    monkeypatch.setattr(tasks.summarize_chain_task, "apply_async",
                        lambda args, **options: published.append((tuple(args), options)))
    chain = make_chain()
    said = [chain_append(chain=chain.pk, messages=tool_round).summarization]
    said += [chain_append(chain=chain.pk, messages=_turn(i)).summarization for i in range(1, 4)]
    assert said == ["queued", "coalesced", "coalesced", "coalesced"]
    assert published == [((chain.pk,), {"countdown": 0.7})]


def test_a_turn_appended_while_the_run_runs_gets_a_follow_up_run(make_chain, tool_round, queued):
    chain = make_chain()
    history = tool_round + [m for i in range(1, 7) for m in _turn(i)]  # enough that PentAGI's passes call the model
    chain_append(chain=chain.pk, messages=history)
    entered, release = threading.Event(), threading.Event()

    def held(prompt: str) -> str:
        entered.set()
        release.wait(60)
        return "## Summary\nports found"

    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(tasks.summarize_chain_task(chain.pk))
        finally:
            connection.close()  # this thread's own; PostgreSQL cannot drop the test database while it is open

    with use_summarizer_factory(lambda **_: held):
        runner = threading.Thread(target=run)
        runner.start()
        try:
            assert entered.wait(60)  # the run has loaded its state and is inside the model call
            assert chain_append(chain=chain.pk, messages=_turn(7)).summarization == "queued"
            assert chain_append(chain=chain.pk, messages=_turn(8)).summarization == "coalesced"
        finally:
            release.set()
            runner.join(60)
    assert outcome and outcome[0] is not None
    assert queued == [chain.pk, chain.pk]  # the first turn's run and the follow-up
    last_seq = Chain.objects.get(pk=chain.pk).last_seq
    assert _covered_seq(chain.pk) < last_seq  # the running run did not see the later turns
    with use_summarizer_factory(lambda **_: (lambda prompt: "## Summary\nports found")):
        tasks.summarize_chain_task(chain.pk)
    assert _covered_seq(chain.pk) == last_seq


def test_a_refused_publish_clears_the_flag_so_the_next_turn_queues_again(make_chain, tool_round, monkeypatch):
    chain = make_chain()

    def refuse(chain_id: int) -> None:
        raise BrokerUnreachable("not queued: broker unreachable (test)")

    monkeypatch.setattr("flows.ingest.append.enqueue", lambda name, chain_id, **_: refuse(chain_id))
    assert chain_append(chain=chain.pk, messages=tool_round).summarization.startswith("not queued")
    assert Chain.objects.get(pk=chain.pk).summary_queued_at is None
    assert chain_append(chain=chain.pk, messages=_turn(1)).summarization.startswith("not queued")  # not "coalesced"


def test_a_flag_whose_task_was_lost_is_queued_again_by_the_sweep_once(make_chain, tool_round, queued, summarizer):
    chain = make_chain()
    chain_append(chain=chain.pk, messages=tool_round)
    assert queued == [chain.pk]
    queued.clear()  # the worker died with the task: the flag stays, and every turn coalesces into a lost run
    assert chain_append(chain=chain.pk, messages=_turn(1)).summarization == "coalesced"
    flagged_at = Chain.objects.get(pk=chain.pk).summary_queued_at
    assert flagged_at is not None
    assert summaries_requeue_stale(older_than_seconds=600, now=flagged_at + timedelta(seconds=599)) == 0
    later = flagged_at + timedelta(seconds=601)
    assert summaries_requeue_stale(older_than_seconds=600, now=later) == 1
    assert queued == [chain.pk]
    assert Chain.objects.get(pk=chain.pk).summary_queued_at == later  # fresh: the next pass leaves it alone
    assert summaries_requeue_stale(older_than_seconds=600, now=later) == 0
    tasks.summarize_chain_task(chain.pk)
    assert _covered_seq(chain.pk) == Chain.objects.get(pk=chain.pk).last_seq


def test_every_server_process_sweep_requeues_a_lost_run_past_the_events_cutoff(make_chain, tool_round, queued,
                                                                                settings):
    settings.CELERY_BROKER_URL = "memory://"
    chain = make_chain()
    chain_append(chain=chain.pk, messages=tool_round)
    queued.clear()  # lost with its worker
    flagged_at = Chain.objects.get(pk=chain.pk).summary_queued_at
    assert flagged_at is not None
    cutoff = longest_call_seconds()  # the events' cutoff on the memory broker
    assert abandoned_sweep(now=flagged_at + timedelta(seconds=cutoff - 5)).requeued == 0
    assert abandoned_sweep(now=flagged_at + timedelta(seconds=cutoff + 1)).requeued == 1
    assert queued == [chain.pk]


def test_a_start_queues_the_chains_whose_queued_run_died_with_the_last_process(make_chain, tool_round, queued):
    flagged, idle = make_chain(), make_chain()
    chain_append(chain=flagged.pk, messages=tool_round)
    Chain.objects.filter(pk=idle.pk).update(summary_queued_at=None)
    sent: list[tuple[str, list[int]]] = []
    recovered = events_recover_interrupted(send=lambda name, args: sent.append((name, args)))
    assert sent == [("flows.summarize_chain", [flagged.pk])] and recovered.summarized == (flagged.pk,)
    assert Chain.objects.get(pk=flagged.pk).summary_queued_at is not None  # the re-queued run is what turns join
    assert chain_append(chain=flagged.pk, messages=_turn(1)).summarization == "coalesced"


def test_the_manage_mode_path_queues_nothing_and_sets_no_flag(make_chain, tool_round, queued):
    chain = make_chain()
    with transaction.atomic():
        locked = Chain.objects.select_for_update().select_related("agent__flow").get(pk=chain.pk)
        result = chain_append_locked(chain=locked, batch=batch_validate(tool_round), queue_summary=False)
    assert result.turn_completed and result.summarization == "none"
    assert queued == [] and Chain.objects.get(pk=chain.pk).summary_queued_at is None
