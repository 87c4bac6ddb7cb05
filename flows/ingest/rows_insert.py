"""One INSERT of an append's Message rows, without the ORM's per-call query building.

`Message.objects.bulk_create` builds an InsertQuery, compiles it and (on PostgreSQL) turns the rows into one
array per column for UNNEST, every time: about a third of an API append's Python calls went there for four rows.
`rows_insert` writes the same values: each column's value comes from the model field itself (`pre_save`, then
`get_db_prep_save`, as bulk_create does, so JSON, defaults and `auto_now_add` are stored identically), the
column list is every concrete column but the auto primary key (a field added later is written too), and the new
ids come back with RETURNING and are set on the rows as bulk_create sets them. A backend that cannot return the
ids of a multi-row insert, a batch larger than `ROWS_PER_STATEMENT` (an import) or a model with a field that
needs its own placeholder takes `bulk_create` as before.

An append also moves its chain's head (last_seq, the running token total...): `head`. On PostgreSQL that UPDATE
rides in the INSERT itself, as a data-modifying WITH clause (executed once, to completion, whether or not the
INSERT reads it), so an agent's turn is one round trip to the database fewer under the chain's row lock; its
values are prepared by the fields as `QuerySet.update` prepares them. Elsewhere, or with a value that is an
expression or a relation, the head is updated by the ORM after the INSERT, as before.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from django.db import connections, router
from django.db.models import Field, Model

from flows.core import server_bound_cursor
from flows.models import Message

__all__ = ["ROWS_PER_STATEMENT", "HeadUpdate", "rows_insert"]

ROWS_PER_STATEMENT = 50  # an agent's batch is a few messages; larger batches keep bulk_create's own batching


@cache
def _columns() -> tuple[Field[Any, Any], ...]:
    return tuple(f for f in Message._meta.concrete_fields if f is not Message._meta.pk)


_STATEMENTS: dict[tuple[str, int], str] = {}  # (backend vendor, rows) -> INSERT text, at most 50 per backend
_HEADS: dict[tuple[str, type[Model], tuple[str, ...]], str] = {}  # (vendor, model, fields) -> the WITH clause


@dataclass(frozen=True)
class HeadUpdate:
    """The one-row UPDATE written with an append's rows: `model`'s row `pk` gets `values` (field name -> value)."""
    model: type[Model]
    pk: int
    values: dict[str, Any]

    def run_alone(self) -> None:
        self.model._base_manager.filter(pk=self.pk).update(**self.values)


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


def _head_clause(connection: Any, head: HeadUpdate) -> str:
    """`WITH ... AS (UPDATE ...) ` for `head`'s fields, quoted for `connection` (built once per field set)."""
    key = (connection.vendor, head.model, tuple(head.values))
    text = _HEADS.get(key)
    if text is None:
        quote, meta = connection.ops.quote_name, head.model._meta
        assignments = ", ".join(f"{quote(meta.get_field(name).column)} = %s" for name in head.values)
        text = _HEADS[key] = (f"WITH {quote('moved_head')} AS (UPDATE {quote(meta.db_table)} SET {assignments} "
                              f"WHERE {quote(meta.pk.column)} = %s) ")
    return text


def _riding(connection: Any, head: HeadUpdate | None) -> HeadUpdate | None:
    """`head` when it can be written inside the INSERT (PostgreSQL, plain values of plain fields), else None (it
    is updated after the INSERT)."""
    if head is None or connection.vendor != "postgresql":
        return None
    meta = head.model._meta
    plain = all(not hasattr(value, "resolve_expression") and not meta.get_field(name).is_relation
                for name, value in head.values.items())
    return head if plain else None


def _head_params(connection: Any, head: HeadUpdate) -> list[Any]:
    meta = head.model._meta
    values = [meta.get_field(name).get_db_prep_save(value, connection) for name, value in head.values.items()]
    return [*values, head.pk]


def rows_insert(rows: list[Message], head: HeadUpdate | None = None) -> list[Message]:
    """Insert `rows` (new Message objects, pk unset) in one statement, with `head`'s update when given (see the
    module docstring); returns the rows with their ids set."""
    using = router.db_for_write(Message)
    connection = connections[using]
    if not rows or len(rows) > ROWS_PER_STATEMENT or not _plain(connection):
        created = Message.objects.bulk_create(rows, batch_size=500)
        if head is not None:
            head.run_alone()
        return created
    riding = _riding(connection, head)
    statement = _statement(connection, len(rows))
    params: list[Any] = []
    if riding is not None:
        statement = _head_clause(connection, riding) + statement
        params = _head_params(connection, riding)
    for row in rows:
        params.extend(f.get_db_prep_save(f.pre_save(row, True), connection) for f in _columns())
    with server_bound_cursor(connection) as cursor:
        cursor.execute(statement, params)
        ids = [pk for (pk,) in cursor.fetchall()]
    if head is not None and riding is None:
        head.run_alone()
    for row, pk in zip(rows, ids, strict=True):
        row.pk = pk
        row._state.adding, row._state.db = False, using
    return rows
