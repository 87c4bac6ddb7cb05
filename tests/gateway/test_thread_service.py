"""gateway_thread against the database: append only what is new, all or nothing, successors on rewrite."""
from __future__ import annotations

from typing import Any

import pytest

from flows.gateway.threads import ChainNotFound, gateway_answer_append, gateway_thread
from flows.ingest import AppendError
from flows.models import Chain, Message, Outcome, SummaryEvent
from flows.pipeline import chain_compact
from tests.flows.pipeline_support import PipelineSummarizer, small_budgets, turn, use_summarizer

pytestmark = pytest.mark.django_db

BASE: list[dict[str, Any]] = [{"role": "system", "content": "sys"}, {"role": "user", "content": "scan the host"}]


@pytest.fixture
def user(django_user_model: Any) -> Any:
    return django_user_model.objects.create_user("gw-user", password="x")


def test_a_new_history_starts_a_flow_titled_by_its_first_request(user: Any) -> None:
    result = gateway_thread(user=user, messages=BASE, agent_type="pentester", model_name="gpt-4o")
    assert result.appended == 2 and result.chain.agent.agent_type == "pentester"
    assert result.chain.agent.flow.title == "scan the host"


def test_a_resent_history_appends_only_its_new_messages(user: Any) -> None:
    first = gateway_thread(user=user, messages=BASE)
    gateway_answer_append(chain_id=first.chain.pk, expected_head=first.head_hash,
                          message={"role": "assistant", "content": "done"})
    again = gateway_thread(user=user, messages=BASE + [{"role": "assistant", "content": "done", "refusal": None},
                                                        {"role": "user", "content": "next"}])
    assert again.chain.pk == first.chain.pk and again.appended == 1
    assert list(Message.objects.filter(chain=first.chain).values_list("seq", flat=True)) == [1, 2, 3, 4]
    assert gateway_thread(user=user, messages=BASE + [{"role": "assistant", "content": "done"},
                                                      {"role": "user", "content": "next"}]).appended == 0


def test_an_answer_is_not_appended_after_the_chain_moved_on(user: Any) -> None:
    first = gateway_thread(user=user, messages=BASE)
    gateway_thread(user=user, messages=BASE + [{"role": "assistant", "content": "a"}])
    assert gateway_answer_append(chain_id=first.chain.pk, expected_head=first.head_hash,
                                 message={"role": "assistant", "content": "late"}) is None


def test_a_tool_result_without_its_call_writes_nothing(user: Any) -> None:
    with pytest.raises(AppendError):
        gateway_thread(user=user, messages=BASE + [{"role": "tool", "tool_call_id": "x", "content": "r"}])
    assert not Chain.objects.exists() and not Message.objects.exists()


def test_a_rewritten_history_archives_the_chain_and_records_the_rewrite(user: Any) -> None:
    first = gateway_thread(user=user, messages=BASE + [{"role": "assistant", "content": "long work"}])
    second = gateway_thread(user=user, messages=BASE + [{"role": "assistant", "content": "summary"},
                                                        {"role": "user", "content": "go on"}])
    assert second.rewritten_from == first.chain.pk and second.chain.parent_id == first.chain.pk
    assert not Chain.objects.get(pk=first.chain.pk).is_active
    assert SummaryEvent.objects.filter(chain=second.chain, trigger="client-rewrite").count() == 1


def test_another_users_pinned_chain_is_not_found(user: Any, django_user_model: Any) -> None:
    theirs = gateway_thread(user=django_user_model.objects.create_user("other", password="x"), messages=BASE)
    with pytest.raises(ChainNotFound):
        gateway_thread(user=user, messages=BASE, pinned_chain_id=theirs.chain.pk)


def test_other_users_identical_histories_never_share_a_chain(user: Any, django_user_model: Any) -> None:
    mine = gateway_thread(user=user, messages=BASE)
    theirs = gateway_thread(user=django_user_model.objects.create_user("twin", password="x"), messages=BASE)
    assert mine.chain.pk != theirs.chain.pk


def test_a_pinned_empty_chain_takes_the_whole_request(user: Any) -> None:
    from flows.ingest.create import agent_create, flow_create

    agent = agent_create(flow=flow_create(owner=user, title="made by the API"), agent_type="pentester")
    empty = agent.chains.get(is_active=True)
    result = gateway_thread(user=user, messages=BASE, pinned_chain_id=empty.pk)
    assert result.chain.pk == empty.pk and result.appended == 2 and result.rewritten_from is None
    assert gateway_thread(user=user, messages=BASE + [{"role": "assistant", "content": "a"}]).chain.pk == empty.pk


def test_an_empty_chain_is_not_matched_unless_pinned(user: Any) -> None:
    from flows.ingest.create import agent_create, flow_create

    agent = agent_create(flow=flow_create(owner=user, title="made by the API"), agent_type="pentester")
    assert gateway_thread(user=user, messages=BASE).chain.agent_id != agent.pk


def test_after_a_compaction_rotates_the_chain_the_next_request_continues_in_the_successor(user: Any) -> None:
    use_summarizer(PipelineSummarizer())
    history: list[dict[str, Any]] = [{"role": "system", "content": "You are a careful pentester."}]
    for index in range(5):
        history += turn(index)
    first = gateway_thread(user=user, messages=history)
    small_budgets(first.chain, keep_recent_tokens=400, truncate_after_compaction=True)
    assert chain_compact(chain_id=first.chain.pk).outcome == Outcome.OK
    successor = Chain.objects.get(agent=first.chain.agent, is_active=True)
    assert successor.parent_id == first.chain.pk
    seeded = successor.last_seq

    nxt = gateway_thread(user=user, messages=history + turn(5)[:1])
    assert (nxt.chain.pk, nxt.appended, nxt.rewritten_from) == (successor.pk, 1, None)
    assert gateway_answer_append(chain_id=successor.pk, expected_head=nxt.head_hash, history=history + turn(5)[:1],
                                 message=turn(5)[1]) == seeded + 2
    assert Chain.objects.filter(agent__flow__owner=user).count() == 2  # no new flow, no rewrite successor


def test_an_answer_the_agents_next_request_brought_first_is_found_not_refused(user: Any) -> None:
    first = gateway_thread(user=user, messages=BASE)
    answer = {"role": "assistant", "content": "port 22 is open"}
    # The answer went out before its record was written; the agent's next request (another server process)
    # appended it together with its new message.
    gateway_thread(user=user, messages=BASE + [{**answer, "refusal": None}, {"role": "user", "content": "go on"}])
    assert gateway_answer_append(chain_id=first.chain.pk, expected_head=first.head_hash, message=answer,
                                 after_seq=first.chain.last_seq) == 3
    assert gateway_answer_append(chain_id=first.chain.pk, expected_head=first.head_hash,
                                 message={"role": "assistant", "content": "something else"},
                                 after_seq=first.chain.last_seq) is None
    assert Message.objects.filter(chain=first.chain).count() == 4


def test_a_chain_keeps_the_running_total_of_its_messages_tokens(user: Any) -> None:
    first = gateway_thread(user=user, messages=BASE)
    gateway_answer_append(chain_id=first.chain.pk, expected_head=first.head_hash,
                          message={"role": "assistant", "content": "done"}, history=BASE)
    gateway_thread(user=user, messages=BASE + [{"role": "assistant", "content": "done"},
                                               {"role": "user", "content": "next"}])
    counts = list(Message.objects.filter(chain=first.chain).values_list("token_count", flat=True))
    assert len(counts) == 4 and all(counts)
    assert Chain.objects.get(pk=first.chain.pk).raw_tokens == sum(counts)
