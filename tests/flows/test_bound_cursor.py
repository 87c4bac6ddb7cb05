"""The append's hot statements bind their parameters on the server and are prepared on PostgreSQL
(`flows.core.bound_cursor`), and `POSTGRES_PREPARE_THRESHOLD` says when (0: never).

Run on SQLite and (scripts/test) on PostgreSQL: on SQLite the cursor is the usual one; on PostgreSQL the
statements an agent's appends run are prepared once the connection has run them the threshold's number of times,
and everything else stays bound on the client as Django binds it.
"""
from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import connection
from django.test.utils import CaptureQueriesContext
from hypothesis import given
from hypothesis import strategies as st

from flows.core import numbered, server_bound_cursor
from flows.ingest import chain_append
from pentagi_web.settings import database_config

pytestmark = pytest.mark.django_db

on_postgres = pytest.mark.skipif(connection.vendor != "postgresql", reason="prepared statements are PostgreSQL's")


def _turn(n: int) -> list[dict]:
    call = f"call_{n}"
    return [{"role": "user", "content": f"scan 10.0.0.{n}"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": call, "type": "function", "function": {"name": "terminal", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": call, "content": "22/tcp open ssh"},
            {"role": "assistant", "content": "ssh open."}]


def _prepared() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return [statement for (statement,) in cursor.fetchall()]


def test_the_cursor_answers_and_passes_through_djangos_execute_wrappers():
    with CaptureQueriesContext(connection) as captured, server_bound_cursor(connection) as cursor:
        cursor.execute("SELECT %s + %s, %s", [2, 3, "text"])
        assert tuple(cursor.fetchone()) == (5, "text")
    assert any("SELECT" in query["sql"] for query in captured.captured_queries)


def test_placeholders_are_numbered_as_postgresql_writes_them():
    assert numbered("SELECT %s, '100%%', %s FROM t WHERE a = %s") == "SELECT $1, '100%', $2 FROM t WHERE a = $3"
    assert numbered("SELECT 1") == "SELECT 1"


def test_a_named_placeholder_is_refused_rather_than_sent_as_it_is():
    with pytest.raises(ValueError, match=r"only %s placeholders can be numbered, not %\( in: SELECT %\(name\)s"):
        numbered("SELECT %(name)s")


@given(st.lists(st.text(alphabet=st.characters(blacklist_characters="%$"), max_size=8), min_size=1, max_size=80))
def test_the_nth_placeholder_becomes_dollar_n_and_the_text_between_is_kept(fragments):
    expected = fragments[0] + "".join(f"${n}{fragment}" for n, fragment in enumerate(fragments[1:], 1))
    assert numbered("%s".join(fragments)) == expected


@on_postgres
def test_a_statement_of_more_than_fifty_parameters_answers_in_order():
    values = list(range(60))
    sql = "SELECT " + ", ".join(["%s::int"] * len(values)) + ", '50%%'"
    with server_bound_cursor(connection) as cursor:
        cursor.execute(sql, values)
        assert list(cursor.fetchone()) == [*values, "50%"]


@on_postgres
def test_the_appends_cursor_takes_numbered_placeholders_as_they_are():
    from psycopg import RawCursor

    with server_bound_cursor(connection) as cursor:
        assert isinstance(cursor.cursor, RawCursor)  # psycopg does not split the statement again on every run


@on_postgres
def test_the_connection_keeps_its_client_binding_cursor_for_everything_else():
    from psycopg import ClientCursor

    connection.ensure_connection()
    usual = connection.connection.cursor_factory
    with pytest.raises(Exception, match="division by zero"), server_bound_cursor(connection) as cursor:
        cursor.execute("SELECT 1 / %s", [0])
    assert connection.connection.cursor_factory is usual
    with connection.cursor() as cursor:
        assert isinstance(cursor.cursor, ClientCursor)


@on_postgres
@pytest.mark.django_db(transaction=True)
def test_an_agents_appends_are_prepared_once_the_threshold_is_reached(make_chain):
    connection.close()  # a session of its own: earlier tests' appends may have prepared on this one
    chain = make_chain()
    threshold = connection.settings_dict["OPTIONS"]["prepare_threshold"]
    assert threshold == 5  # the default of POSTGRES_PREPARE_THRESHOLD
    for n in range(threshold - 1):
        chain_append(chain=chain.pk, messages=_turn(n))
    assert not [s for s in _prepared() if "flows_message" in s]
    for n in range(threshold - 1, threshold + 2):
        chain_append(chain=chain.pk, messages=_turn(n))
    prepared = _prepared()
    assert any(s.startswith('WITH "moved_head" AS (UPDATE "flows_chain"') and '"flows_message"' in s for s in prepared)
    assert any('FROM "flows_chain"' in s and "FOR UPDATE" in s for s in prepared)
    chain.refresh_from_db()
    assert chain.last_seq == 4 * (threshold + 2)  # the prepared runs wrote what the first runs wrote


@pytest.mark.parametrize(("value", "threshold"), [(None, 5), ("5", 5), ("1", 1), ("12", 12), ("0", None)])
def test_the_threshold_comes_from_the_environment(monkeypatch, value, threshold):
    if value is None:
        monkeypatch.delenv("POSTGRES_PREPARE_THRESHOLD", raising=False)
    else:
        monkeypatch.setenv("POSTGRES_PREPARE_THRESHOLD", value)
    config = database_config("postgres://u@127.0.0.1:5432/db")
    assert config["OPTIONS"]["prepare_threshold"] == threshold


@pytest.mark.parametrize("value", ["-1", "off", "2.5", "five"])
def test_a_threshold_that_is_not_a_whole_number_stops_the_start(monkeypatch, value):
    monkeypatch.setenv("POSTGRES_PREPARE_THRESHOLD", value)
    with pytest.raises(ImproperlyConfigured, match=f"POSTGRES_PREPARE_THRESHOLD={value!r}: must be a whole number"):
        database_config("postgres://u@127.0.0.1:5432/db")


def test_sqlite_has_no_prepare_threshold(monkeypatch):
    monkeypatch.setenv("POSTGRES_PREPARE_THRESHOLD", "7")
    assert "prepare_threshold" not in database_config("sqlite:////tmp/x.sqlite3").get("OPTIONS", {})
