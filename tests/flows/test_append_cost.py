"""What one append costs the database, in statements: pinned, so a change that adds a query per append fails here.

An agent appends a turn every few seconds for hours, and the API's throughput is bounded by what each append
does under the chain's row lock. These counts are exact and independent of the machine's speed.
"""
from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flows.engine import message_size
from flows.ingest import AppendError, chain_append
from flows.ingest.pairing import check_pairing, tail_of
from flows.models import Chain, Flow, Message
from tests.app_fixtures import call

pytestmark = pytest.mark.django_db

STATEMENT = re.compile(r'^\s*(SELECT|INSERT INTO|UPDATE)\s.*?"(flows_\w+)"', re.S)
# PostgreSQL: the chain's head update rides in the rows' INSERT (flows/ingest/rows_insert.py)
HEAD_WITH_ROWS = re.compile(r'^\s*WITH "moved_head" AS \(UPDATE "flows_chain" SET .*\) INSERT INTO "flows_message" ',
                            re.S)


def _turn(n: int) -> list[dict[str, Any]]:
    cid = f"call_{n}"
    return [{"role": "user", "content": f"scan host {n}"},
            {"role": "assistant", "content": None, "tool_calls": [call(cid)]},
            {"role": "tool", "tool_call_id": cid, "content": "22/tcp open ssh\n" * 40},
            {"role": "assistant", "content": f"host {n}: ssh open"}]


def _statements(captured: CaptureQueriesContext) -> list[tuple[str, str]]:
    """(verb, first table) of each data statement. Not the append's: the test transaction's savepoints, and the
    token read (inside a transaction, as every test runs, the token is read afresh; a server keeps it a while:
    flows/ingest/auth.py)."""
    out: list[tuple[str, str]] = []
    for query in captured.captured_queries:
        if HEAD_WITH_ROWS.match(query["sql"]):
            out.append(("INSERT + UPDATE", "flows_message + flows_chain"))
            continue
        found = STATEMENT.match(query["sql"])
        if found and found.group(2) != "flows_apitoken":
            out.append((found.group(1).split()[0], found.group(2)))
        elif found:
            continue
        else:
            assert re.match(r"^\s*(SAVEPOINT|RELEASE SAVEPOINT|BEGIN)", query["sql"]), query["sql"]
    return out


def _rows_and_head() -> list[tuple[str, str]]:
    """The rows' INSERT and the chain's head UPDATE: one statement on PostgreSQL, two elsewhere."""
    if connection.vendor == "postgresql":
        return [("INSERT + UPDATE", "flows_message + flows_chain")]
    return [("INSERT", "flows_message"), ("UPDATE", "flows_chain")]


def _quiet_flow(chain: Chain) -> None:
    """The flow was marked active a moment ago, so this append does not mark it again (once a second)."""
    Flow.objects.filter(pk=chain.agent.flow_id).update(updated_at=timezone.now() + timedelta(hours=1))


def test_an_api_append_of_a_turn_is_three_statements_two_on_postgresql(api_client, make_chain):
    chain = make_chain(messages=[{"role": "system", "content": "You scan."}, *_turn(0)])
    api_client.post(f"/api/chains/{chain.pk}/messages", {"messages": _turn(1)})  # the token is checked once
    _quiet_flow(chain)
    with CaptureQueriesContext(connection) as captured:
        resp = api_client.post(f"/api/chains/{chain.pk}/messages", {"messages": _turn(2)})
    assert resp.status_code == 201, resp.json()
    # the chain locked and checked visible in one read, the rows in one insert, the chain's head in one update
    # (in the insert on PostgreSQL); no tail read: the turn's tool result answers the turn's own assistant message
    assert _statements(captured) == [("SELECT", "flows_chain"), *_rows_and_head()]


def test_a_batch_opening_with_a_tool_result_reads_the_tail_in_one_query(api_client, make_chain):
    chain = make_chain(messages=[{"role": "user", "content": "go"},
                                 {"role": "assistant", "content": None, "tool_calls": [call("c1")]}])
    _quiet_flow(chain)
    with CaptureQueriesContext(connection) as captured:
        resp = api_client.post(f"/api/chains/{chain.pk}/messages", {"messages": [
            {"role": "tool", "tool_call_id": "c1", "content": "done"}, {"role": "assistant", "content": "ok"}]})
    assert resp.status_code == 201, resp.json()
    assert resp.json()["turn_completed"] is True
    assert _statements(captured) == [("SELECT", "flows_chain"), ("SELECT", "flows_message"), *_rows_and_head()]


def test_the_first_append_to_an_empty_chain_reads_no_tail(make_chain):
    chain = make_chain()
    _quiet_flow(chain)
    with CaptureQueriesContext(connection) as captured:
        chain_append(chain=chain.pk, messages=[{"role": "user", "content": "go"}])
    assert _statements(captured) == [("SELECT", "flows_chain"), *_rows_and_head()]


def test_a_chain_the_user_may_not_see_is_not_found_and_unchanged(make_chain, other_user):
    chain = make_chain(messages=[{"role": "user", "content": "go"}])
    with pytest.raises(Chain.DoesNotExist):
        chain_append(chain=chain.pk, messages=[{"role": "assistant", "content": "ok"}], visible_to=other_user)
    assert chain.messages.count() == 1


def test_a_tool_result_in_a_later_batch_is_sized_with_its_stored_calls_name(make_chain):
    chain = make_chain(messages=[{"role": "user", "content": "go"},
                                 {"role": "assistant", "content": None,
                                  "tool_calls": [call("c1", name="a_rather_long_tool_name")]}])
    result = {"role": "tool", "tool_call_id": "c1", "content": "done"}
    chain_append(chain=chain, messages=[result])
    stored = Message.objects.get(chain=chain, seq=3)
    assert stored.byte_size == message_size(result, {"c1": "a_rather_long_tool_name"})
    assert stored.byte_size != message_size(result, {})


CALL_IDS = ["c1", "c2"]
NAMES = ["terminal", "browser_navigate"]


def _assistant(calls: list[tuple[str, str]]) -> dict[str, Any]:
    if not calls:
        return {"role": "assistant", "content": "thinking"}
    return {"role": "assistant", "content": None, "tool_calls": [call(i, name=n) for i, n in calls]}


message = st.one_of(
    st.just({"role": "user", "content": "go on"}),
    st.builds(_assistant, st.lists(st.tuples(st.sampled_from(CALL_IDS), st.sampled_from(NAMES)), max_size=2,
                                   unique_by=lambda c: c[0])),
    st.builds(lambda i: {"role": "tool", "tool_call_id": i, "content": f"out {i}"}, st.sampled_from(CALL_IDS)),
)


def _names_so_far(messages: list[dict[str, Any]]) -> dict[str, str]:
    """Call id -> function name of the newest call with that id (the engine's rule for sizing a tool result)."""
    return {c["id"]: c["function"]["name"] for m in messages for c in m.get("tool_calls") or ()}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=st.lists(st.lists(message, min_size=1, max_size=3), max_size=6))
def test_every_stored_size_is_the_engines_size_of_the_whole_chain(make_chain, batches):
    """A tool result counts the name of the newest call with its id (the engine's `chain_bytes` rule), whether
    that call came in the same batch or an earlier one, with the same name reused or changed between calls."""
    kept: list[dict[str, Any]] = [{"role": "user", "content": "task"}]
    chain = make_chain(messages=kept)
    for batch in batches:
        try:
            chain_append(chain=chain, messages=batch)
        except AppendError:
            continue
        kept.extend(batch)
    sizes = list(chain.messages.order_by("seq").values_list("byte_size", flat=True))
    assert sizes == [message_size(m, _names_so_far(kept[:i + 1])) for i, m in enumerate(kept)]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(stored=st.lists(message, max_size=4), batch=st.lists(message, min_size=1, max_size=4))
def test_an_append_that_skips_the_tail_read_decides_as_the_tail_would(make_chain, stored, batch):
    """Refused or not, and whether the turn ends, are the same as pairing against the stored tail read in full,
    whether or not the append read it (`tail_needed`)."""
    chain = make_chain(messages=[{"role": "user", "content": "task"}])
    for earlier in stored:
        try:
            chain_append(chain=chain, messages=[earlier])
        except AppendError:
            continue
    try:
        expected: Any = check_pairing(tail_of(chain), batch)
    except AppendError as exc:
        expected = (exc.code, exc.index)
    before = chain.last_seq
    try:
        got: Any = chain_append(chain=chain, messages=batch).turn_completed
    except AppendError as exc:
        got = (exc.code, exc.index)
    assert got == expected
    assert chain.messages.count() == (before if isinstance(got, tuple) else before + len(batch))
