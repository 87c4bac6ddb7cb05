"""flows.core.queue and flows.pipeline.summarizers: the two seams between the pipeline and the rest."""
from __future__ import annotations

import pytest
from celery import current_app
from django.db import transaction

from flows.core import SUMMARIZE_CHAIN, enqueue, enqueue_on_commit, publishing_in_background
from flows.core.queue import TASK_NAMES, outbox_drain
from flows.pipeline import set_summarizer_factory, tasks, use_summarizer_factory
from flows.pipeline.llm.callables import summarize_callable_for
from flows.pipeline.summarizers import summarizer_for


def test_every_queued_name_is_a_registered_task():
    registered = {task.name for task in (tasks.summarize_chain_task, tasks.compact_chain_task, tasks.fit_chain_task)}
    assert set(TASK_NAMES) == registered
    assert all(name in current_app.tasks for name in TASK_NAMES)


def test_an_unknown_task_name_is_refused_before_anything_is_queued():
    with pytest.raises(ValueError, match="unknown task"):
        enqueue("flows.no_such_task", 1)
    with pytest.raises(ValueError, match="unknown task"):
        enqueue_on_commit("flows.no_such_task", 1)


@pytest.mark.django_db(transaction=True)
def test_a_task_is_queued_only_when_the_transaction_commits(monkeypatch):
    queued: list[tuple[int, ...]] = []
    monkeypatch.setattr(tasks.summarize_chain_task, "delay", lambda *args: queued.append(args))
    with transaction.atomic():
        enqueue_on_commit(SUMMARIZE_CHAIN, 7)
        assert queued == []
    assert queued == [(7,)]
    with pytest.raises(RuntimeError), transaction.atomic():
        enqueue_on_commit(SUMMARIZE_CHAIN, 8)
        raise RuntimeError("rolled back")
    assert queued == [(7,)]


def test_runs_use_the_installed_summarizer_and_the_default_comes_back():
    seen: list[dict[str, object]] = []

    def factory(**kwargs: object):
        seen.append(kwargs)
        return lambda prompt: "fake summary"

    with use_summarizer_factory(factory):
        assert summarizer_for(flow=None, event=None, purpose="compaction")("prompt") == "fake summary"
    assert seen == [{"flow": None, "event": None, "purpose": "compaction"}]
    previous = set_summarizer_factory(None)
    assert previous is summarize_callable_for


def test_published_in_the_background_tasks_go_out_in_order_and_a_failure_does_not_stop_the_next(monkeypatch, caplog):
    published: list[tuple[int, ...]] = []

    def delay(*args: int) -> None:
        if args == (2,):
            raise ConnectionError("broker down")
        published.append(args)

    monkeypatch.setattr(tasks.summarize_chain_task, "delay", delay)
    with publishing_in_background():
        for chain_id in (1, 2, 3):
            enqueue(SUMMARIZE_CHAIN, chain_id)
    assert outbox_drain()
    assert published == [(1,), (3,)]
    assert "could not queue flows.summarize_chain(2,)" in caplog.text


def test_a_delayed_task_goes_out_with_its_countdown_directly_and_from_the_outbox(monkeypatch):
    sent: list[tuple[tuple[int, ...], dict[str, float]]] = []
    monkeypatch.setattr(tasks.summarize_chain_task, "apply_async",
                        lambda args, **options: sent.append((tuple(args), options)))
    monkeypatch.setattr(tasks.summarize_chain_task, "delay", lambda *args: sent.append((args, {})))
    assert enqueue(SUMMARIZE_CHAIN, 1, delay=0.7) is True
    enqueue(SUMMARIZE_CHAIN, 2)  # no delay: published as before, without a countdown
    with publishing_in_background():
        enqueue(SUMMARIZE_CHAIN, 3, delay=0.7)
    assert outbox_drain()
    assert sent == [((1,), {"countdown": 0.7}), ((2,), {}), ((3,), {"countdown": 0.7})]


def test_in_eager_mode_a_task_runs_before_enqueue_returns_even_when_asked_to_publish_in_the_background(monkeypatch):
    ran: list[tuple[int, ...]] = []
    monkeypatch.setattr(tasks.summarize_chain_task, "delay", lambda *args: ran.append(args))
    eager, current_app.conf.task_always_eager = current_app.conf.task_always_eager, True
    try:
        with publishing_in_background():
            enqueue(SUMMARIZE_CHAIN, 5)
        assert ran == [(5,)]
    finally:
        current_app.conf.task_always_eager = eager
