"""Model faults and worker crashes never lose or duplicate data.

Hypothesis drives schedules of agent turns, each followed by what the worker's summarize run meets: a working
model, a failing model, a flaky one (every other call fails), a worker that dies before saving (the task is
redelivered: acks_late), or no run at all (the worker was down). After every step, and after a final healthy
run: the raw chain holds every appended message once and in order, and the newest view stands for every raw
message exactly once (its lineage partitions seqs 1..last_seq) with the newest ones verbatim.
"""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flows.models import ChainView, Message, Outcome, SummaryEvent
from flows.pipeline import chain_summarize, set_summarizer_factory, summarization
from tests.fakes import FakeSummarizer
from tests.flows.pipeline_support import PipelineSummarizer, small_budgets, turn
from tests.reliability.invariants import assert_chain_intact

pytestmark = pytest.mark.django_db

OUTCOMES = ("ok", "model_fails", "flaky_model", "worker_dies", "no_run")
SCHEDULES = settings(max_examples=12, deadline=None,
                     suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


class FlakySummarizer(FakeSummarizer):
    """Fails every other call (a provider that times out under load)."""

    def __init__(self) -> None:
        super().__init__(self._odd_calls_time_out)

    @staticmethod
    def _odd_calls_time_out(number: int, prompt: str) -> str:
        if number % 2:
            raise TimeoutError("provider timed out")
        return f"summary of {len(prompt)} bytes"


class WorkerDied(RuntimeError):
    pass


def _run(chain_id: int, outcome: str, monkeypatch) -> None:
    model = {"model_fails": PipelineSummarizer(fail="HTTP 500 from the provider"),
             "flaky_model": FlakySummarizer()}.get(outcome, PipelineSummarizer())
    set_summarizer_factory(lambda **_kw: model)
    if outcome == "no_run":
        return
    if outcome == "worker_dies":
        with monkeypatch.context() as patch:
            def die(*_a, **_k):
                raise WorkerDied("killed before the save")
            patch.setattr(summarization, "view_save", die)
            with pytest.raises(WorkerDied):
                chain_summarize(chain_id=chain_id)
    chain_summarize(chain_id=chain_id)  # the (re)delivered task


def _assert_view_partitions_raw(chain) -> None:
    view = ChainView.objects.filter(chain=chain).order_by("-version").first()
    if view is None:
        return
    # A summary is a pair (assistant call + its result): both messages stand for the same raw messages.
    groups = [lin for i, lin in enumerate(view.lineage) if i == 0 or lin != view.lineage[i - 1]]
    seqs = sorted(seq for lineage in groups for seq in lineage)
    assert seqs == list(range(1, view.raw_seq_to + 1)), (view.lineage, "a raw message is lost or doubled")
    assert len(view.lineage) == len(view.messages)
    newest = Message.objects.get(chain=chain, seq=view.raw_seq_to).to_dict()
    assert view.messages[-1]["role"] == newest["role"]
    assert view.messages[-1].get("content") == newest.get("content")


@SCHEDULES
@given(schedule=st.lists(st.sampled_from(OUTCOMES), min_size=1, max_size=7))
def test_no_fault_schedule_loses_or_duplicates_a_message(make_chain, monkeypatch, schedule):
    monkeypatch.setattr("flows.ingest.append.after_append", lambda *a, **k: None)  # runs are driven here
    chain = make_chain([{"role": "system", "content": "You are a careful pentester."}])
    small_budgets(chain)
    appended = [{"role": "system", "content": "You are a careful pentester."}]
    for index, outcome in enumerate(schedule):
        batch = turn(index, output_bytes=900)
        from flows.ingest.append import chain_append

        chain_append(chain=chain, messages=batch)
        appended += batch
        _run(chain.pk, outcome, monkeypatch)
        assert_chain_intact(chain, appended)
        _assert_view_partitions_raw(chain)
    _run(chain.pk, "ok", monkeypatch)
    chain.refresh_from_db()
    view = ChainView.objects.filter(chain=chain).order_by("-version").first()
    assert view is not None and view.raw_seq_to == chain.last_seq
    _assert_view_partitions_raw(chain)
    assert not SummaryEvent.objects.filter(chain=chain, outcome=Outcome.RUNNING, trigger="turn").exists()
    versions = list(ChainView.objects.filter(chain=chain).order_by("version").values_list("version", flat=True))
    assert versions == list(range(1, len(versions) + 1))


def test_a_failing_model_still_shows_the_model_every_new_message(make_chain, monkeypatch):
    monkeypatch.setattr("flows.ingest.append.after_append", lambda *a, **k: None)
    chain = make_chain([{"role": "system", "content": "s"}, *turn(0)])
    small_budgets(chain)
    from flows.ingest.append import chain_append

    for i in range(1, 6):
        chain_append(chain=chain, messages=turn(i))
        _run(chain.pk, "model_fails", monkeypatch)
    chain.refresh_from_db()
    view = ChainView.objects.filter(chain=chain).order_by("-version").first()
    assert view.raw_seq_to == chain.last_seq
    assert SummaryEvent.objects.filter(chain=chain, outcome=Outcome.FAILED).count() >= 1
    _assert_view_partitions_raw(chain)
