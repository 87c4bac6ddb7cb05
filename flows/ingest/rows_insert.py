"""One INSERT of an append's Message rows, without the ORM's per-call query building.

`Message.objects.bulk_create` builds an InsertQuery, compiles it and (on PostgreSQL) turns the rows into one
array per column for UNNEST, every time: about a third of an API append's Python calls went there for four rows.
`rows_insert` writes the same values: each column's value comes from the model field itself (`pre_save`, then
`get_db_prep_save`, as bulk_create does, so JSON, defaults and `auto_now_add` are stored identically), the
column list is every concrete column but the auto primary key (a field added later is written too), and the new
ids come back with RETURNING and are set on the rows as bulk_create sets them. A backend that cannot return the
ids of a multi-row insert, a batch larger than `ROWS_PER_STATEMENT` (an import) or a model with a field that
needs its own placeholder takes `bulk_create` as before.
"""
from __future__ import annotations

from functools import cache
from typing import Any

from django.db import connections, router
from django.db.models import Field

from flows.models import Message

__all__ = ["ROWS_PER_STATEMENT", "rows_insert"]

ROWS_PER_STATEMENT = 50  # an agent's batch is a few messages; larger batches keep bulk_create's own batching


@cache
def _columns() -> tuple[Field[Any, Any], ...]:
    return tuple(f for f in Message._meta.concrete_fields if f is not Message._meta.pk)


_STATEMENTS: dict[tuple[str, int], str] = {}  # (backend vendor, rows) -> INSERT text, at most 50 per backend


def _statement(connection: Any, rows: int) -> str:
    """The INSERT of `rows` rows, quoted for `connection`'s backend (built once per backend and row count)."""
    key = (connection.vendor, rows)
    text = _STATEMENTS.get(key)
    if text is None:
        quote = connection.ops.quote_name
        columns = ", ".join(quote(f.column) for f in _columns())
        one = "(" + ", ".join(["%s"] * len(_columns())) + ")"
        text = _STATEMENTS[key] = (
            f"INSERT INTO {quote(Message._meta.db_table)} ({columns}) VALUES {', '.join([one] * rows)} "
            f"RETURNING {quote(Message._meta.pk.column)}")
    return text


def _plain(connection: Any) -> bool:
    """Whether the one-statement path applies on `connection` (else bulk_create)."""
    return (connection.features.can_return_rows_from_bulk_insert
            and not any(hasattr(f, "get_placeholder") for f in _columns()))


def rows_insert(rows: list[Message]) -> list[Message]:
    """Insert `rows` (new Message objects, pk unset) in one statement; returns them with their ids set."""
    using = router.db_for_write(Message)
    connection = connections[using]
    if not rows or len(rows) > ROWS_PER_STATEMENT or not _plain(connection):
        return Message.objects.bulk_create(rows, batch_size=500)
    params: list[Any] = []
    for row in rows:
        params.extend(f.get_db_prep_save(f.pre_save(row, True), connection) for f in _columns())
    with connection.cursor() as cursor:
        cursor.execute(_statement(connection, len(rows)), params)
        ids = [pk for (pk,) in cursor.fetchall()]
    for row, pk in zip(rows, ids, strict=True):
        row.pk = pk
        row._state.adding, row._state.db = False, using
    return rows
