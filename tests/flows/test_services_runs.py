"""chain_summarize / chain_fit / chain_preview: views are versioned, lineage is in raw seqs, saves are safe."""
from __future__ import annotations

import pytest
from django.db.models import QuerySet

from flows.ingest import chain_append
from flows.models import Chain, ChainView, Message, ModelWindow, Outcome, SummaryEvent, ViewSection
from flows.pipeline import chain_compact, chain_fit, chain_preview, chain_summarize, load_state, runs, view_current
from flows.pipeline import view_records as records
from flows.pipeline.runs import view_save
from tests.flows.pipeline_support import PipelineSummarizer, grow, small_budgets, turn, use_summarizer

pytestmark = pytest.mark.django_db


def _raw(chain):
    return [m.to_dict() for m in Message.objects.filter(chain=chain).order_by("seq")]


def test_the_first_summarization_builds_a_view_of_the_raw_chain(make_chain, tool_round, monkeypatch):
    use_summarizer(PipelineSummarizer())
    chain = make_chain(tool_round)
    event = chain_summarize(chain_id=chain.pk)
    view = view_current(chain=chain)
    assert view.version == 1
    assert view.messages == tool_round
    assert view.lineage == [[1], [2], [3], [4], [5]]
    assert view.raw_seq_to == 5
    assert event.outcome == Outcome.SKIPPED and event.calls == 0
    assert event.view_id == view.pk
    sections = list(ViewSection.objects.filter(view=view))
    assert len(sections) == 1
    assert sections[0].pairs[0]["raw_seqs"] == [3, 4] and sections[0].pairs[0]["view_range"] == [2, 4]
    assert sections[0].header["human_preview"] == "scan 10.0.0.5"


def test_summarizing_again_without_new_messages_records_nothing(make_chain, tool_round, monkeypatch):
    use_summarizer(PipelineSummarizer())
    chain = make_chain(tool_round)
    chain_summarize(chain_id=chain.pk)
    assert chain_summarize(chain_id=chain.pk) is None
    assert ChainView.objects.filter(chain=chain).count() == 1
    assert SummaryEvent.objects.filter(chain=chain).count() == 0  # the first run changed nothing: counted only
    chain.refresh_from_db()
    assert chain.skipped_runs == 1


def test_a_run_that_summarizes_is_kept_as_an_event_and_idle_ones_are_only_counted(make_chain, tool_round):
    use_summarizer(PipelineSummarizer())
    chain = make_chain(tool_round)
    small_budgets(chain)
    grow(chain, range(6))
    event = chain_summarize(chain_id=chain.pk)
    assert event is not None and event.calls > 0
    assert SummaryEvent.objects.filter(pk=event.pk).exists()


def test_the_next_turn_is_summarized_on_top_of_the_previous_view(make_chain, monkeypatch):
    use_summarizer(PipelineSummarizer())
    chain = grow(make_chain(), range(1))
    chain_summarize(chain_id=chain.pk)
    first = view_current(chain=chain)
    grow(chain, range(1, 2))
    chain_summarize(chain_id=chain.pk)
    view = view_current(chain=chain)
    assert view.version == 2 and view.raw_seq_to == chain.last_seq
    # the new turn (the newest section) is verbatim at the end, each message standing for its own raw seq
    assert view.messages[-4:] == _raw(chain)[-4:]
    assert view.lineage[-4:] == [[seq] for seq in range(chain.last_seq - 3, chain.last_seq + 1)]
    # the older section was condensed (PentAGI stage A) and stands for the raw messages it replaced
    assert view.messages[0] == first.messages[0] and len(view.messages) < chain.last_seq


def test_older_sections_are_summarized_with_lineage_in_raw_seqs(make_chain, monkeypatch):
    fake = PipelineSummarizer()
    use_summarizer(fake)
    chain = make_chain()
    small_budgets(chain)
    grow(chain, range(6))
    event = chain_summarize(chain_id=chain.pk)
    view = view_current(chain=chain)
    assert event.outcome == Outcome.OK
    assert event.calls == fake.calls > 0
    assert len(view.messages) < chain.last_seq
    assert view.byte_size < event.bytes_before
    # every raw message is still accounted for by exactly the view messages that stand for it
    covered = {seq for lineage in view.lineage for seq in lineage}
    assert covered == set(range(1, chain.last_seq + 1))
    assert "summary #" in event.summary_text
    assert event.covered and all(lo <= hi for lo, hi in event.covered)
    assert any(p["summary"] for s in ViewSection.objects.filter(view=view) for p in s.pairs)


def test_a_failed_summarizer_is_recorded_and_the_new_messages_still_reach_the_view(make_chain, monkeypatch):
    use_summarizer(PipelineSummarizer(fail="endpoint refused the connection"))
    chain = make_chain()
    small_budgets(chain)
    grow(chain, range(6))
    event = chain_summarize(chain_id=chain.pk)
    assert event.outcome == Outcome.FAILED
    assert "endpoint refused the connection" in event.reason
    assert view_current(chain=chain).messages == _raw(chain)


def test_a_stale_run_never_overwrites_a_newer_view(make_chain, tool_round, monkeypatch):
    use_summarizer(PipelineSummarizer())
    chain = make_chain(tool_round)
    stale = load_state(chain.pk)
    chain_summarize(chain_id=chain.pk)
    assert view_save(stale, messages=stale.messages, lineage=stale.lineage, steps=[], snapshot={},
                     notify=False) is None
    assert list(ChainView.objects.filter(chain=chain).values_list("version", flat=True)) == [1]


@pytest.mark.django_db(transaction=True)
def test_a_run_that_loses_the_race_starts_over_from_the_newer_view(make_chain, monkeypatch):
    """While the first run summarizes, another turn is appended and summarized: the first run retries.

    Transactional: the racing writes come from the engine's worker thread (its own connection), which must not
    wait on a test-wide transaction holding SQLite's write lock."""
    chain = make_chain()
    small_budgets(chain)
    grow(chain, range(6))
    inner = PipelineSummarizer()
    state = {"raced": False}

    def racing(prompt: str) -> str:
        if not state["raced"]:
            state["raced"] = True
            use_summarizer(inner)
            chain_append(chain=chain, messages=turn(6))
            chain_summarize(chain_id=chain.pk)
        return "outer summary"

    use_summarizer(racing)
    chain_summarize(chain_id=chain.pk)
    assert state["raced"]
    versions = list(ChainView.objects.filter(chain=chain).order_by("version").values_list("version", flat=True))
    assert versions == list(range(1, len(versions) + 1))
    chain.refresh_from_db()
    assert chain.view_version == versions[-1]
    assert view_current(chain=chain).raw_seq_to == chain.last_seq
    assert not SummaryEvent.objects.filter(chain=chain, outcome=Outcome.RUNNING).exists()


def test_a_known_small_window_records_a_separate_window_event(make_chain, monkeypatch):
    use_summarizer(PipelineSummarizer())
    chain = make_chain(model_name="tiny-test-model")
    small_budgets(chain, last_sec_bytes=64 * 1024, max_bp_bytes=16 * 1024, max_qa_bytes=256 * 1024,
                  max_qa_sections=100, keep_recent_tokens=1500)
    ModelWindow.objects.create(model="tiny-test-model", context_window=8000, max_output_tokens=500)
    # one long section (a single ask, many tool rounds): within the byte budgets, beyond the window
    rounds = [turn(i, output_bytes=2500)[1:3] for i in range(12)]
    chain_append(chain=chain, messages=[{"role": "system", "content": "You are a pentester."}, turn(0)[0],
                                        *[m for pair in rounds for m in pair]])
    turn_event = chain_summarize(chain_id=chain.pk)
    window_event = SummaryEvent.objects.get(chain=chain, trigger="window")
    assert turn_event.trigger == "turn"
    assert window_event.outcome == Outcome.OK, window_event.reason
    assert window_event.tokens_after < window_event.tokens_before
    assert view_current(chain=chain).token_count <= 8000 - 500
    chain.refresh_from_db()
    assert chain.compactions == 1


def test_an_unknown_window_skips_the_fit(make_chain, monkeypatch):
    use_summarizer(PipelineSummarizer())
    chain = grow(make_chain(model_name="no-such-model-anywhere"), range(3))
    assert chain_fit(chain_id=chain.pk) is not None  # the new raw messages still get a view
    assert not SummaryEvent.objects.filter(chain=chain, outcome=Outcome.OK).exists()
    assert chain_fit(chain_id=chain.pk) is None


def test_the_preview_saves_nothing_and_is_deterministic(make_chain):
    chain = make_chain()
    grow(chain, range(6))
    counts = (ChainView.objects.count(), SummaryEvent.objects.count(), Message.objects.count())
    settings = {"last_sec_bytes": 2048, "max_bp_bytes": 1024, "max_qa_sections": 2, "max_qa_bytes": 4096}
    first = chain_preview(chain=chain, settings=settings)
    second = chain_preview(chain=chain, settings=settings)
    assert (ChainView.objects.count(), SummaryEvent.objects.count(), Message.objects.count()) == counts
    assert first == second
    stats = first["stats"]
    assert stats["calls"] > 0 and stats["bytes_after"] < stats["bytes_before"]
    assert stats["bytes_saved"] == stats["bytes_before"] - stats["bytes_after"]
    assert 0 <= stats["identifier_retention"] <= 1
    assert first["current"]["messages"] == chain.last_seq  # no view yet: the raw chain is current
    assert len(first["lineage"]) == len(first["view"])


def test_the_preview_refuses_invalid_settings(make_chain, tool_round):
    from flows.config.registry import SettingsError

    chain = make_chain(tool_round)
    with pytest.raises(SettingsError):
        chain_preview(chain=chain, settings={"last_sec_bytes": "lots"})


# ----------------------------------------------------------------------------------------------- compaction

def _record_broadcasts(monkeypatch) -> list[dict]:
    sent: list[dict] = []
    monkeypatch.setattr("flows.pipeline.runs.broadcast", lambda chain_id, event: sent.append(dict(event)))
    return sent


def test_manual_compaction_keeps_the_recent_tail_and_counts(make_chain, monkeypatch,
                                                            django_capture_on_commit_callbacks):
    use_summarizer(PipelineSummarizer())
    sent = _record_broadcasts(monkeypatch)
    chain = make_chain()
    small_budgets(chain, keep_recent_tokens=400)
    grow(chain, range(5))
    with django_capture_on_commit_callbacks(execute=True):
        event = chain_compact(chain_id=chain.pk, instructions="Focus on ssh")
    chain.refresh_from_db()
    view = view_current(chain=chain)
    assert event.outcome == Outcome.OK and event.trigger == "manual"
    assert chain.compactions == 1
    assert view.messages[0]["role"] == "system"
    assert view.messages[-1] == _raw(chain)[-1]  # the recent tail is verbatim
    assert [e["type"] for e in sent] == ["compaction.started", "view.updated", "compaction.completed"]
    assert sent[-1]["compactions"] == 1 and sent[-1]["event_id"] == event.pk


def test_a_manual_compaction_that_changes_nothing_still_reports_its_end(make_chain, monkeypatch,
                                                                       django_capture_on_commit_callbacks):
    use_summarizer(PipelineSummarizer())
    sent = _record_broadcasts(monkeypatch)
    chain = make_chain()
    small_budgets(chain, keep_recent_tokens=100_000)  # the whole view sits in the kept tail: nothing to compact
    grow(chain, range(1))
    with django_capture_on_commit_callbacks(execute=True):
        event = chain_compact(chain_id=chain.pk, instructions="")
    assert event.outcome == Outcome.SKIPPED
    assert [e["type"] for e in sent][-1] == "compaction.skipped"
    assert sent[-1]["event_id"] == event.pk and sent[-1]["reason"] == event.reason


def test_manual_compaction_without_a_kept_tail_is_a_hard_checkpoint(make_chain, monkeypatch):
    use_summarizer(PipelineSummarizer())
    chain = make_chain()
    small_budgets(chain, keep_recent_tokens=0)
    grow(chain, range(5))
    assert chain_compact(chain_id=chain.pk).outcome == Outcome.OK
    view = view_current(chain=chain)
    assert [m["role"] for m in view.messages] == ["system", "user"]
    assert "summary #" in str(view.messages[1]["content"])
    grow(chain, range(5, 6))  # later messages continue after the checkpoint
    chain_summarize(chain_id=chain.pk)
    assert view_current(chain=chain).messages[-1] == _raw(chain)[-1]


def test_with_notifications_off_the_event_is_still_recorded(make_chain, monkeypatch,
                                                            django_capture_on_commit_callbacks):
    use_summarizer(PipelineSummarizer())
    sent = _record_broadcasts(monkeypatch)
    chain = make_chain()
    small_budgets(chain, keep_recent_tokens=400, notify_user=False)
    grow(chain, range(5))
    with django_capture_on_commit_callbacks(execute=True):
        event = chain_compact(chain_id=chain.pk)
    assert SummaryEvent.objects.filter(pk=event.pk, outcome=Outcome.OK).exists()
    assert [e["type"] for e in sent] == ["view.updated"]


def test_a_failed_compaction_keeps_the_view_and_says_why(make_chain, monkeypatch,
                                                         django_capture_on_commit_callbacks):
    use_summarizer(PipelineSummarizer())
    chain = make_chain()
    small_budgets(chain, keep_recent_tokens=400)
    grow(chain, range(5))
    chain_summarize(chain_id=chain.pk)
    before = view_current(chain=chain)
    use_summarizer(PipelineSummarizer(fail="503 overloaded"))
    sent = _record_broadcasts(monkeypatch)
    with django_capture_on_commit_callbacks(execute=True):
        event = chain_compact(chain_id=chain.pk)
    assert event.outcome == Outcome.FAILED and "503 overloaded" in event.reason
    assert view_current(chain=chain).pk == before.pk
    assert sent[-1]["type"] == "compaction.failed" and "503 overloaded" in sent[-1]["reason"]
    chain.refresh_from_db()
    assert chain.compactions == 0


def test_hooks_get_counts_and_a_failing_hook_is_not_fatal(make_chain, monkeypatch,
                                                          django_capture_on_commit_callbacks):
    from flows.pipeline.hooks import after_compaction, before_compaction

    use_summarizer(PipelineSummarizer())
    seen: list[tuple[str, dict]] = []

    def broken(**kwargs):
        raise RuntimeError("integration bug")

    def before(**kwargs):
        seen.append(("before", kwargs))

    def after(**kwargs):
        seen.append(("after", kwargs))

    for signal, receiver in ((before_compaction, broken), (before_compaction, before), (after_compaction, after)):
        signal.connect(receiver)
    try:
        chain = make_chain()
        small_budgets(chain, keep_recent_tokens=400)
        grow(chain, range(5))
        with django_capture_on_commit_callbacks(execute=True):
            event = chain_compact(chain_id=chain.pk)
    finally:
        before_compaction.disconnect(broken)
        before_compaction.disconnect(before)
        after_compaction.disconnect(after)
    assert event.outcome == Outcome.OK
    (_, b), (_, a) = seen
    assert b["message_count"] == chain.last_seq and b["token_count"] > 0
    assert a["compacted_count"] > 0 and a["message_count"] < b["message_count"]
    assert a["event_id"] == event.pk and a["token_count"] < b["token_count"]


def test_an_overflow_forces_a_compaction_even_when_our_count_says_it_fits(make_chain, monkeypatch):
    """Overflow recovery (§4): the provider's observed token count wins over our estimate."""
    use_summarizer(PipelineSummarizer())
    chain = make_chain(model_name="tiny-test-model")
    small_budgets(chain, last_sec_bytes=64 * 1024, max_bp_bytes=16 * 1024, max_qa_bytes=256 * 1024,
                  max_qa_sections=100, keep_recent_tokens=1000)
    ModelWindow.objects.create(model="tiny-test-model", context_window=32000, max_output_tokens=1000)
    grow(chain, range(8), output_bytes=2000)
    chain_summarize(chain_id=chain.pk)
    before = view_current(chain=chain)
    assert chain_fit(chain_id=chain.pk) is None  # fits by our count, nothing new: nothing to do
    event = chain_fit(chain_id=chain.pk, trigger="overflow", observed_tokens=40000)
    assert event.trigger == "overflow" and event.outcome == Outcome.OK, event.reason
    after = view_current(chain=chain)
    assert after.version == before.version + 1 and after.token_count < before.token_count


def _call(call_id: str) -> dict:
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": call_id, "type": "function", "function": {"name": "run", "arguments": "{}"}}]}


def test_an_open_tool_round_stays_out_of_the_view_until_its_results_arrive(make_chain, tool_round):
    use_summarizer(PipelineSummarizer())
    chain = make_chain(tool_round)
    chain_append(chain=chain, messages=[{"role": "user", "content": "next"}, _call("c9")])
    state = load_state(chain.pk)
    assert [m.seq for m in state.new_raw] == [1, 2, 3, 4, 5, 6] and [m.seq for m in state.pending_raw] == [7]
    assert state.sendable[-1]["tool_calls"][0]["id"] == "c9" and state.sendable_seq_to == 7
    chain_summarize(chain_id=chain.pk)
    assert view_current(chain=chain).raw_seq_to == 6
    assert all(m.get("tool_call_id") != "c9" for m in view_current(chain=chain).messages)  # no stand-in result
    chain_append(chain=chain, messages=[{"role": "tool", "tool_call_id": "c9", "content": "done"}])
    state = load_state(chain.pk)
    assert [m.seq for m in state.new_raw] == [7, 8] and not state.pending_raw


@pytest.mark.parametrize(("roles", "expected"), [
    ([], 0), (["user"], 1), (["user", "call:a"], 1), (["call:a", "tool:a"], 2), (["call:a+b", "tool:a"], 0),
    (["tool:a", "tool:b"], 2), (["call:a", "user"], 2), (["call:a", "assistant"], 2),
])
def test_the_open_round_starts_at_an_assistant_whose_calls_are_not_all_answered(roles, expected):
    from flows.pipeline.runs import open_round_start

    def row(spec: str) -> Message:
        kind, _, ids = spec.partition(":")
        if kind == "call":
            return Message(role="assistant", tool_calls=[{"id": i} for i in ids.split("+")])
        return Message(role=kind, tool_call_id=ids)

    assert open_round_start([row(spec) for spec in roles]) == expected


def test_the_save_measures_the_view_and_its_events_before_it_locks_the_chain(make_chain, monkeypatch):
    """Every append to the chain waits for the save's row lock: the sizes, sections and retention the rows
    record are worked out before the lock is taken, and the rows carry them."""
    order: list[str] = []
    lock, measure, outcome = QuerySet.select_for_update, runs.view_measures, runs.step_outcome

    def locking(self, *args, **kwargs):
        if self.model is Chain:
            order.append("lock")
        return lock(self, *args, **kwargs)

    monkeypatch.setattr(QuerySet, "select_for_update", locking)
    monkeypatch.setattr(runs, "view_measures", lambda *a, **k: order.append("measure") or measure(*a, **k))
    monkeypatch.setattr(runs, "step_outcome", lambda step: order.append("outcome") or outcome(step))
    use_summarizer(PipelineSummarizer())
    chain = make_chain()
    small_budgets(chain)
    grow(chain, range(6))
    event = chain_summarize(chain_id=chain.pk)
    save = order[order.index("measure"):]  # the run's claim locked the chain earlier
    assert save[-1] == "lock" and "lock" not in save[:-1] and "outcome" in save
    view = view_current(chain=chain)
    assert event.outcome == Outcome.OK and event.retention and event.summary_text
    assert (view.byte_size, view.token_count) == (records.view_bytes(view.messages),
                                                  records.view_tokens(view.messages, model=None))
    assert ViewSection.objects.filter(view=view).count() == len(records.section_records(view.messages, view.lineage))
