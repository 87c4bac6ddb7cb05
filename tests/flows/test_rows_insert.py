"""An append's rows written by one hand-built INSERT (`flows.ingest.rows_insert`) are the rows bulk_create writes.

The append no longer goes through `Message.objects.bulk_create`; what it stores must not change for it: every
column, JSON shapes (null, strings, lists, nested objects, non-BMP text), defaults, and the ids set on the rows.
Run on SQLite and (scripts/test) on PostgreSQL, where JSON goes through a different adapter.
"""
from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from django.db import connection
from django.db.models import F
from django.test.utils import CaptureQueriesContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flows.ingest.rows_insert import ROWS_PER_STATEMENT, HeadUpdate, rows_insert
from flows.models import Chain, Message

pytestmark = pytest.mark.django_db

COLUMNS = ("seq", "role", "content", "tool_calls", "tool_call_id", "name", "reasoning", "extra", "byte_size",
           "token_count")
text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=40)
json_value = st.recursive(st.none() | st.booleans() | st.integers(-2**53, 2**53) | text,
                          lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
                          max_leaves=8)
fields = st.fixed_dictionaries({
    "role": st.sampled_from(["system", "user", "assistant", "tool"]),
    "content": json_value,
    "tool_calls": st.none() | st.lists(st.dictionaries(text, json_value, max_size=3), min_size=1, max_size=2),
    "tool_call_id": text, "name": text, "reasoning": json_value,
    "extra": st.dictionaries(text, json_value, max_size=3),
    "byte_size": st.integers(0, 2**31 - 1), "token_count": st.none() | st.integers(0, 2**31 - 1),
})


def _rows(chain: Chain, batch: list[dict[str, Any]], first_seq: int) -> list[Message]:
    return [Message(chain=chain, seq=first_seq + i, **values) for i, values in enumerate(batch)]


def _stored(chain: Chain) -> list[dict[str, Any]]:
    return list(Message.objects.filter(chain=chain).order_by("seq").values(*COLUMNS))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=st.lists(st.lists(fields, min_size=1, max_size=4), min_size=1, max_size=3))
def test_the_insert_stores_what_bulk_create_stores(make_chain, batches):
    ours, theirs = make_chain(), make_chain()
    seq = 1
    for batch in batches:
        rows_insert(_rows(ours, batch, seq))
        Message.objects.bulk_create(_rows(theirs, batch, seq))
        seq += len(batch)
    assert _stored(ours) == _stored(theirs)


def test_the_rows_come_back_saved_with_their_own_ids_in_one_statement(make_chain):
    chain = make_chain()
    batch = [{"role": "user", "content": f"ask {i}"} for i in range(4)]
    with CaptureQueriesContext(connection) as captured:
        rows = rows_insert(_rows(chain, batch, 1))
    assert [q["sql"].split()[:2] for q in captured.captured_queries
            if not q["sql"].startswith(("SAVEPOINT", "RELEASE"))] == [["INSERT", "INTO"]]
    assert all(not row._state.adding and row._state.db == "default" for row in rows)
    stored = dict(Message.objects.filter(chain=chain).values_list("seq", "pk"))
    assert [(row.seq, row.pk) for row in rows] == sorted(stored.items())
    assert all(row.created_at is not None for row in rows)


def test_a_batch_beyond_one_statement_is_stored_whole(make_chain):
    chain = make_chain()
    batch = [{"role": "user", "content": f"line {i}"} for i in range(ROWS_PER_STATEMENT + 7)]
    rows = rows_insert(_rows(chain, batch, 1))
    assert [row.seq for row in rows] == list(range(1, len(batch) + 1))
    assert [m["content"] for m in _stored(chain)] == [m["content"] for m in batch]
    assert all(row.pk is not None for row in rows)


HEAD_COLUMNS = ("last_seq", "tool_call_id_template", "raw_tokens", "summary_queued_at", "head_hash", "head_seq",
                "compactions")
heads = st.fixed_dictionaries({
    "last_seq": st.integers(0, 2**31 - 1), "tool_call_id_template": text.map(lambda t: t[:100]),
    "raw_tokens": st.none() | st.integers(0, 2**31 - 1), "head_hash": st.text("0123456789abcdef", max_size=64),
    "head_seq": st.integers(0, 2**31 - 1),
}, optional={"summary_queued_at": st.none() | st.datetimes(datetime(1970, 1, 1), datetime(2100, 1, 1),
                                                           timezones=st.just(UTC))})


def _head(chain: Chain) -> dict[str, Any]:
    return Chain.objects.filter(pk=chain.pk).values(*HEAD_COLUMNS).get()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch=st.lists(fields, min_size=1, max_size=3), values=heads)
def test_the_head_written_with_the_rows_is_what_the_orm_update_writes(make_chain, batch, values):
    ours, theirs = make_chain(), make_chain()
    rows_insert(_rows(ours, batch, 1), head=HeadUpdate(Chain, ours.pk, values))
    rows_insert(_rows(theirs, batch, 1))
    Chain.objects.filter(pk=theirs.pk).update(**values)
    assert _head(ours) == _head(theirs)
    assert _stored(ours) == _stored(theirs)


def test_on_postgresql_the_head_rides_in_the_insert_elsewhere_it_follows(make_chain):
    chain = make_chain()
    with CaptureQueriesContext(connection) as captured:
        rows_insert(_rows(chain, [{"role": "user", "content": "go"}], 1), head=HeadUpdate(Chain, chain.pk, {
            "last_seq": 1, "raw_tokens": 5}))
    sent = [q["sql"].split()[0] for q in captured.captured_queries
            if not q["sql"].startswith(("SAVEPOINT", "RELEASE"))]
    assert sent == (["WITH"] if connection.vendor == "postgresql" else ["INSERT", "UPDATE"])
    assert (_head(chain)["last_seq"], _head(chain)["raw_tokens"]) == (1, 5)


def test_an_expression_or_a_relation_in_the_head_is_updated_after_the_insert(make_chain):
    chain, parent = make_chain(), make_chain()
    with CaptureQueriesContext(connection) as captured:
        rows_insert(_rows(chain, [{"role": "user", "content": "go"}], 1), head=HeadUpdate(Chain, chain.pk, {
            "last_seq": 1, "compactions": F("compactions") + 2, "parent": parent}))
    assert [q["sql"].split()[0] for q in captured.captured_queries
            if not q["sql"].startswith(("SAVEPOINT", "RELEASE"))] == ["INSERT", "UPDATE"]
    assert (_head(chain)["last_seq"], _head(chain)["compactions"]) == (1, 2)
    assert Chain.objects.get(pk=chain.pk).parent_id == parent.pk
    assert [m["content"] for m in _stored(chain)] == ["go"]
