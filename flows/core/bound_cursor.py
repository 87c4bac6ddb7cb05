"""A cursor that sends its parameters apart from the SQL on PostgreSQL, for statements run on every append.

Django's psycopg backend merges parameters into the SQL text on the client (`ClientCursor`, the default): each
execution is a new literal statement that PostgreSQL parses and plans again, and psycopg splits and quotes the
statement in Python. An agent appends turns over and over with the same two statements (the chain's locking
read, the rows' INSERT), so those go through a server-binding cursor: psycopg sends the parameters separately
and, once a connection has run a statement `prepare_threshold` times, as a prepared statement that PostgreSQL
neither parses nor plans again. Django connects with no threshold (nothing prepared); the settings set it from
POSTGRES_PREPARE_THRESHOLD (default 5; 0: never, e.g. behind a PgBouncer that does not keep prepared statements).
The client-binding cursors everywhere else never prepare. The pooled API threads keep their connections
(flows.core.db_threads), so the preparing pays for itself.

psycopg still turns each statement's `%s` placeholders into PostgreSQL's `$1, $2...` on every execution, with a
regular expression, and caches the result only for statements of at most 50 parameters: four message rows have
48, plus the chain's head, so the INSERT was split again on every append (90 microseconds of the interpreter
per append, 20 with the raw cursor). Here the numbering is done once per statement text (`numbered`) and the
cursor is psycopg's raw one, which takes `$n` placeholders as they are.

The cursor is made by Django's own `connection.cursor()` with that cursor class, so execute wrappers, query
logging and the time-zone loader apply as to any other cursor. Other backends get their usual cursor and SQL.
"""
from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

__all__ = ["server_bound_cursor", "numbered"]

_PLACEHOLDER_RE = re.compile(r"%(.)", re.DOTALL)
_STATEMENTS_CACHED = 256  # an append's statement texts: the lock read and one INSERT per batch size, with a head or not


@functools.lru_cache(maxsize=_STATEMENTS_CACHED)
def numbered(sql: str) -> str:
    """`sql` with its `%s` placeholders numbered as PostgreSQL writes them (`$1`, `$2`...) and `%%` as `%`.
    Any other `%` sequence (a named placeholder) raises ValueError: the raw cursor would send it as it is."""
    count = 0

    def replace(match: re.Match[str]) -> str:
        nonlocal count
        if match.group(1) == "%":
            return "%"
        if match.group(1) != "s":
            raise ValueError(f"only %s placeholders can be numbered, not %{match.group(1)} in: {sql[:200]}")
        count += 1
        return f"${count}"

    return _PLACEHOLDER_RE.sub(replace, sql)


class _Numbering:
    """Django's cursor over psycopg's raw cursor: `execute` numbers the statement's placeholders first."""

    def __init__(self, cursor: Any) -> None:
        self._cursor = cursor

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> Any:
        return self._cursor.execute(numbered(sql), params)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cursor, name)


@functools.cache
def _cursor_class() -> type:
    import psycopg
    from django.db.backends.postgresql.base import CursorMixin

    class NumberedBindingCursor(CursorMixin, psycopg.RawCursor):
        """Django's server-binding cursor (its callproc included) with PostgreSQL's own `$n` placeholders."""

    return NumberedBindingCursor


@contextmanager
def server_bound_cursor(connection: Any) -> Iterator[Any]:
    """`connection.cursor()`, binding its parameters on the server when `connection` is PostgreSQL's (statements
    written with `%s` placeholders, as for any Django cursor)."""
    if connection.vendor != "postgresql":
        with connection.cursor() as cursor:
            yield cursor
        return
    connection.ensure_connection()
    raw = connection.connection
    usual = raw.cursor_factory
    raw.cursor_factory = _cursor_class()  # this thread's connection: no other thread sees the swap
    try:
        cursor = connection.cursor()
    finally:
        raw.cursor_factory = usual
    with cursor:
        yield _Numbering(cursor)
