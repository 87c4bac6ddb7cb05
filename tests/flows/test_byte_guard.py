"""Byte guard and successor segments (compaction.md §7; acceptance facts 51-52 that apply to us)."""
from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from flows.ingest import chain_append
from flows.models import Chain, Message, Outcome
from flows.pipeline import chain_compact, chain_summarize, view_current
from flows.pipeline.compaction import drop_retried_user_messages
from tests.flows.pipeline_support import PipelineSummarizer, grow, small_budgets, turn, use_summarizer

T0 = datetime(2026, 1, 1, tzinfo=UTC)
RETRY_TEXT = "please run the deployment status check for prod"


def _user(text: str, name: str = "") -> dict:
    return {"role": "user", "content": text, **({"name": name} if name else {})}


def _kept(messages, seconds):
    return [messages[i] for i in drop_retried_user_messages(messages, [T0 + timedelta(seconds=s) for s in seconds])]


def test_fact_52_equal_long_text_a_second_apart_drops_the_second():
    messages = [_user(RETRY_TEXT), _user("please  run the deployment status\ncheck for prod ")]
    assert _kept(messages, [0, 1]) == messages[:1]


def test_fact_52_short_repeats_are_kept():
    messages = [_user("next"), _user("next")]
    assert _kept(messages, [0, 1]) == messages


def test_fact_52_equal_long_text_69_seconds_apart_is_kept():
    messages = [_user(RETRY_TEXT), _user(RETRY_TEXT)]
    assert _kept(messages, [0, 69]) == messages


def test_fact_52_a_retry_after_another_user_message_is_dropped():
    alice, bob = _user(RETRY_TEXT, "alice"), _user("bob asks about the staging cluster today", "bob")
    assert _kept([alice, bob, _user(RETRY_TEXT, "alice")], [0, 1, 2]) == [alice, bob]


def test_fact_52_sender_and_text_never_collide():
    first, second = _user("b|please run the deployment status", "a"), _user("please run the deployment status", "a|b")
    assert _kept([first, second], [0, 1]) == [first, second]


def test_an_assistant_message_between_makes_a_repeat_a_new_ask():
    messages = [_user(RETRY_TEXT), {"role": "assistant", "content": "done"}, _user(RETRY_TEXT)]
    assert _kept(messages, [0, 1, 2]) == messages


pytestmark_db = pytest.mark.django_db


def _snapshot(chain: Chain) -> list[tuple]:
    return list(Message.objects.filter(chain=chain).order_by("seq").values_list("seq", "role", "content",
                                                                                 "tool_calls", "created_at"))


def _rotating_chain(make_chain) -> Chain:
    """Five turns under small budgets with successor segments on: a compaction rotates it."""
    use_summarizer(PipelineSummarizer())
    chain = make_chain()
    small_budgets(chain, keep_recent_tokens=400, truncate_after_compaction=True)
    return grow(chain, range(5))


@pytestmark_db
def test_fact_51_a_compaction_with_truncation_continues_in_a_successor(make_chain, monkeypatch):
    chain = _rotating_chain(make_chain)
    before = _snapshot(chain)
    event = chain_compact(chain_id=chain.pk)
    assert event.outcome == Outcome.OK, event.reason
    chain.refresh_from_db()
    successor = Chain.objects.get(agent=chain.agent, is_active=True)
    assert successor.parent_id == chain.pk and not chain.is_active
    assert _snapshot(chain) == before  # the archived segment is byte-identical
    seeded = [m.to_dict() for m in successor.messages.order_by("seq")]
    assert len(seeded) < len(before)
    texts = [str(m.get("content")) for m in seeded]
    assert any("summary #" in t for t in texts)  # the summary
    assert any("task 4" in t for t in texts)  # the kept user ask
    assert not any("task 0:" in t for t in texts)  # the old user ask left with the summary
    assert view_current(chain=successor).messages == seeded
    assert successor.compactions == chain.compactions == 1
    assert str(successor.pk) in event.reason


@pytestmark_db
def test_fact_51_the_successor_drops_a_retried_user_message(make_chain, monkeypatch):
    use_summarizer(PipelineSummarizer())
    chain = make_chain()
    small_budgets(chain, keep_recent_tokens=600, truncate_after_compaction=True)
    grow(chain, range(4))
    chain_append(chain=chain, messages=[_user(RETRY_TEXT)])
    chain_append(chain=chain, messages=[_user(RETRY_TEXT + " ")])
    retried = Message.objects.filter(chain=chain).order_by("-seq")[:2]
    first_time = Message.objects.get(chain=chain, seq=retried[1].seq).created_at
    Message.objects.filter(pk=retried[0].pk).update(created_at=first_time + timedelta(seconds=1))
    chain_append(chain=chain, messages=turn(9)[1:])
    chain_compact(chain_id=chain.pk)
    successor = Chain.objects.get(agent=chain.agent, is_active=True)
    texts = [m.content for m in successor.messages.all() if m.role == "user"]
    assert sum(1 for t in texts if isinstance(t, str) and t.startswith(RETRY_TEXT)) == 1


@pytestmark_db
def test_fact_51_no_compaction_means_no_successor(make_chain, tool_round, monkeypatch):
    use_summarizer(PipelineSummarizer(fail="endpoint down"))
    chain = make_chain()
    small_budgets(chain, keep_recent_tokens=400, truncate_after_compaction=True)
    grow(chain, range(5))
    assert chain_compact(chain_id=chain.pk).outcome == Outcome.FAILED
    assert Chain.objects.filter(agent=chain.agent).count() == 1


@pytestmark_db
def test_fact_51_without_truncation_a_compaction_never_rotates(make_chain, monkeypatch):
    use_summarizer(PipelineSummarizer())
    chain = make_chain()
    small_budgets(chain, keep_recent_tokens=400)
    grow(chain, range(5))
    assert chain_compact(chain_id=chain.pk).outcome == Outcome.OK
    assert Chain.objects.filter(agent=chain.agent).count() == 1


@pytestmark_db
def test_the_guard_compacts_before_the_next_turn_once_the_segment_is_big(make_chain, monkeypatch):
    use_summarizer(PipelineSummarizer())
    chain = make_chain()
    small_budgets(chain, keep_recent_tokens=400, truncate_after_compaction=True,
                  max_active_transcript_bytes=3000)
    grow(chain, range(2))
    event = chain_summarize(chain_id=chain.pk)  # 2 turns: under 3000 bytes, a normal turn
    assert event.trigger == "turn"
    grow(chain, range(2, 5))
    event = chain_summarize(chain_id=chain.pk)
    assert event.trigger == "byte-guard" and event.outcome == Outcome.OK, event.reason
    assert Chain.objects.get(agent=chain.agent, is_active=True).parent_id == chain.pk


@pytestmark_db
def test_the_guard_needs_successor_segments(make_chain, monkeypatch):
    """Without truncate_after_compaction the guard is refused by validation and ignored if stored anyway."""
    from flows.config.registry import SettingsError, settings_validate

    with pytest.raises(SettingsError):
        settings_validate({"max_active_transcript_bytes": 3000, "truncate_after_compaction": False})
    use_summarizer(PipelineSummarizer())
    chain = make_chain()
    small_budgets(chain, max_active_transcript_bytes=3000)
    grow(chain, range(5))
    assert chain_summarize(chain_id=chain.pk).trigger == "turn"
    assert Chain.objects.filter(agent=chain.agent).count() == 1


@pytestmark_db
def test_an_open_tool_round_follows_the_seed_into_the_successor(make_chain):
    chain = _rotating_chain(make_chain)
    ask, call, result, _answer = turn(5)
    chain_append(chain=chain, messages=[ask, call])  # the model's call is in; its result is not
    assert chain_compact(chain_id=chain.pk).outcome == Outcome.OK
    successor = Chain.objects.get(agent=chain.agent, is_active=True)
    seeded = [m.to_dict() for m in successor.messages.order_by("seq")]
    assert seeded[-1]["tool_calls"] == call["tool_calls"]
    assert view_current(chain=successor).raw_seq_to == len(seeded) - 1  # the open round is raw, not in the view
    chain_append(chain=successor, messages=[result])  # the real result answers its call in the successor


@pytestmark_db
def test_a_message_appended_during_the_compaction_is_not_lost_to_the_successor(make_chain, monkeypatch):
    from flows.pipeline import compaction

    chain = _rotating_chain(make_chain)
    real_step, late = compaction._compact_step, turn(5)

    def step_then_append(*args, **kwargs):
        step = real_step(*args, **kwargs)
        if len(late):  # once: the agent's next turn lands while the compaction runs
            chain_append(chain=Chain.objects.get(pk=chain.pk), messages=[late.pop(0) for _ in range(len(late))])
        return step

    monkeypatch.setattr(compaction, "_compact_step", step_then_append)
    assert chain_compact(chain_id=chain.pk).outcome == Outcome.OK
    successor = Chain.objects.get(agent=chain.agent, is_active=True)
    texts = [str(m.content) for m in successor.messages.all()]
    assert any("(turn 5)" in t for t in texts)  # the late turn's answer reached the successor
