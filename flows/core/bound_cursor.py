"""A cursor that sends its parameters apart from the SQL on PostgreSQL, for statements run on every append.

Django's psycopg backend merges parameters into the SQL text on the client (`ClientCursor`, the default): each
execution is a new literal statement that PostgreSQL parses and plans again, and psycopg splits and quotes the
statement in Python (uncached once it has more than 50 parameters: four message rows have 48, plus the chain's
head). An agent appends turns over and over with the same two statements (the chain's locking read, the rows'
INSERT), so those go through a server-binding cursor: psycopg sends the parameters separately and, once a
connection has run a statement `prepare_threshold` times, as a prepared statement that PostgreSQL neither parses
nor plans again. Django connects with no threshold (nothing prepared); the settings set it from
POSTGRES_PREPARE_THRESHOLD (default 5; 0: never, e.g. behind a PgBouncer that does not keep prepared statements).
The client-binding cursors everywhere else never prepare. The pooled API threads keep their connections
(flows.core.db_threads), so the preparing pays for itself.

The cursor is made by Django's own `connection.cursor()` with the backend's server-binding cursor class, so
execute wrappers, query logging and the time-zone loader apply as to any other cursor. Other backends get their
usual cursor.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["server_bound_cursor"]


@contextmanager
def server_bound_cursor(connection: Any) -> Iterator[Any]:
    """`connection.cursor()`, binding its parameters on the server when `connection` is PostgreSQL's."""
    if connection.vendor != "postgresql":
        with connection.cursor() as cursor:
            yield cursor
        return
    from django.db.backends.postgresql.base import ServerBindingCursor

    connection.ensure_connection()
    raw = connection.connection
    usual = raw.cursor_factory
    raw.cursor_factory = ServerBindingCursor  # this thread's connection: no other thread sees the swap
    try:
        cursor = connection.cursor()
    finally:
        raw.cursor_factory = usual
    with cursor:
        yield cursor
