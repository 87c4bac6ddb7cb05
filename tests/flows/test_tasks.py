"""Celery tasks take ids, call one service, and are safe to run again (acks_late re-delivery)."""
from __future__ import annotations

import pytest

from flows.models import ChainView, Outcome, SummaryEvent
from flows.pipeline import chain_request_compaction, tasks
from tests.flows.pipeline_support import PipelineSummarizer, grow, small_budgets, use_summarizer

pytestmark = pytest.mark.django_db


def test_the_summarize_task_writes_one_view_however_often_it_runs(make_chain, tool_round, monkeypatch):
    use_summarizer(PipelineSummarizer())
    chain = make_chain(tool_round)
    first = tasks.summarize_chain_task.apply(args=[chain.pk]).get()
    again = tasks.summarize_chain_task.apply(args=[chain.pk]).get()
    assert isinstance(first, int)
    assert again is None
    assert ChainView.objects.filter(chain=chain).count() == 1


def test_tasks_for_a_deleted_chain_do_nothing(make_chain, tool_round):
    chain = make_chain(tool_round)
    chain_id = chain.pk
    chain.agent.flow.delete()
    assert tasks.summarize_chain_task.apply(args=[chain_id]).get() is None
    assert tasks.compact_chain_task.apply(args=[chain_id, 1]).get() is None
    assert tasks.fit_chain_task.apply(args=[chain_id]).get() is None


def test_requesting_a_compaction_queues_the_task_after_commit(make_chain, tool_round, monkeypatch,
                                                                django_capture_on_commit_callbacks):
    queued = []
    monkeypatch.setattr(tasks.compact_chain_task, "delay", lambda *args: queued.append(args))
    chain = make_chain(tool_round)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        event = chain_request_compaction(chain=chain, instructions="Focus on the open ports")
        assert queued == []  # nothing runs before the event row is committed
    for callback in callbacks:
        callback()
    assert queued == [(chain.pk, event.pk)]
    assert event.outcome == Outcome.RUNNING and event.trigger == "manual"
    assert event.instructions == "Focus on the open ports"


def test_a_redelivered_compaction_task_finishes_its_event_once(make_chain, monkeypatch):
    use_summarizer(PipelineSummarizer())
    monkeypatch.setattr(tasks.compact_chain_task, "delay", lambda *args: None)
    chain = make_chain()
    small_budgets(chain, keep_recent_tokens=300)
    grow(chain, range(5))
    event = chain_request_compaction(chain=chain, instructions="")
    first = tasks.compact_chain_task.apply(args=[chain.pk, event.pk]).get()
    views = ChainView.objects.filter(chain=chain).count()
    again = tasks.compact_chain_task.apply(args=[chain.pk, event.pk]).get()
    assert first == again == event.pk
    assert ChainView.objects.filter(chain=chain).count() == views
    event.refresh_from_db()
    assert event.outcome == Outcome.OK, event.reason
    assert SummaryEvent.objects.filter(chain=chain, trigger="manual").count() == 1


def test_the_fit_task_calls_the_fit_service(make_chain, tool_round, monkeypatch):
    seen = []
    monkeypatch.setattr("flows.pipeline.tasks.chain_fit", lambda **kw: seen.append(kw))
    chain = make_chain(tool_round)
    assert tasks.fit_chain_task.apply(args=[chain.pk]).get() is None
    assert seen == [{"chain_id": chain.pk, "trigger": "window"}]
