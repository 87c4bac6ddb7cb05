"""Model invariants: seq is contiguous per chain, raw history is append-only, one active chain per agent."""
from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from flows.ingest import chain_append
from flows.models import AppendOnlyError, Chain, Message

pytestmark = pytest.mark.django_db


def test_seq_is_contiguous_across_batches_and_chains_number_independently(make_chain, tool_round):
    first, second = make_chain(), make_chain()
    chain_append(chain=first, messages=tool_round[:2])
    chain_append(chain=second, messages=tool_round[:1])
    chain_append(chain=first, messages=tool_round[2:])
    assert list(first.messages.values_list("seq", flat=True)) == [1, 2, 3, 4, 5]
    assert list(second.messages.values_list("seq", flat=True)) == [1]
    first.refresh_from_db()
    assert first.last_seq == 5


def test_a_stored_message_cannot_be_changed_or_deleted(make_chain, tool_round):
    row = make_chain(messages=tool_round).messages.first()
    row.content = "rewritten"
    with pytest.raises(AppendOnlyError):
        row.save()
    with pytest.raises(AppendOnlyError):
        row.delete()
    assert Message.objects.get(pk=row.pk).content == "You are a pentester."


def test_a_duplicate_seq_is_refused_by_the_database(make_chain, tool_round):
    chain = make_chain(messages=tool_round[:1])
    with pytest.raises(IntegrityError), transaction.atomic():
        Message.objects.create(chain=chain, seq=1, role="user", content="again")


def test_an_agent_has_one_active_chain(make_agent):
    agent = make_agent()
    assert agent.chains.filter(is_active=True).count() == 1
    with pytest.raises(IntegrityError), transaction.atomic():
        Chain.objects.create(agent=agent)


def test_sizes_follow_pentagi_and_tokens_are_counted(make_chain, tool_round):
    rows = list(make_chain(messages=tool_round).messages.order_by("seq"))
    tool = rows[3]
    # a result counts its id, the name of the call it answers and its content
    assert tool.byte_size == len("call_aaaaaaaaaaaaaaaaaaaaaaaa") + len("terminal") + len("22/tcp open ssh")
    assert rows[0].byte_size == len("You are a pentester.")
    assert all(r.token_count and r.token_count > 0 for r in rows)


def test_the_id_template_is_learned_from_the_first_calls(make_chain, tool_round):
    chain = make_chain(messages=tool_round[:2])
    assert chain.tool_call_id_template == ""
    chain_append(chain=chain, messages=[{"role": "assistant", "content": None, "tool_calls": [
        {"id": "toolu_01ABCDEFGHIJKLMNOPQRSTUV", "type": "function", "function": {"name": "t", "arguments": "{}"}}]}])
    chain.refresh_from_db()
    assert chain.tool_call_id_template == "toolu_{r:24:b}"


def test_an_archived_segment_refuses_appends_and_names_the_active_one(make_chain, tool_round):
    from flows.ingest.errors import AppendError

    old = make_chain(messages=tool_round)
    Chain.objects.filter(pk=old.pk).update(is_active=False)
    successor = Chain.objects.create(agent=old.agent, parent=old)
    with pytest.raises(AppendError) as info:
        chain_append(chain=old, messages=[{"role": "user", "content": "more"}])
    assert info.value.status == 409 and info.value.extra["active_chain_id"] == successor.pk


def test_nul_characters_in_agent_text_are_stored_and_read_back_exactly(make_chain):
    from flows.models.fields import ESCAPE

    text = f"before\x00after {ESCAPE} literal"
    chain = make_chain(messages=[{"role": "user", "content": text},
                                 {"role": "assistant", "content": [{"type": "text", "text": "\x00"}]}])
    rows = list(Message.objects.filter(chain=chain).order_by("seq"))
    assert rows[0].content == text and rows[1].content == [{"type": "text", "text": "\x00"}]


def test_an_over_long_tool_call_id_is_refused_before_the_database(make_chain):
    from flows.ingest.errors import AppendError

    chain = make_chain(messages=[{"role": "user", "content": "q"}])
    # Refused where it is issued: a call whose id the tool_call_id column cannot hold could never be answered.
    with pytest.raises(AppendError) as info:
        chain_append(chain=chain, messages=[{"role": "assistant", "content": None,
                                             "tool_calls": [{"id": "c" * 300, "type": "function",
                                                             "function": {"name": "t", "arguments": "{}"}}]}])
    assert (info.value.index, info.value.field) == (0, "tool_calls[0].id")
    with pytest.raises(AppendError) as info:
        chain_append(chain=chain, messages=[{"role": "tool", "tool_call_id": "c" * 300, "content": "r"}])
    assert info.value.field == "tool_call_id"
    chain.refresh_from_db()
    assert chain.last_seq == 1
