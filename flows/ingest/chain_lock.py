"""The append's locking read (a chain with its agent and flow): the ORM's own query, compiled once per reader kind.

Every append locks its chain's row and reads the agent and flow with it, filtered by who may see the chain
(`Chain.objects.visible_to`). Built and compiled by the ORM each time, that one read was about 1,500 of an API
append's 3,400 Python calls on PostgreSQL (the three-table join, its filters and columns). Its SQL is the same for
every append of one kind of reader (`sees_every_flow`, or no reader at all) but for two parameters, the chain's id
and the reader's, so `locked_chain` compiles the ORM's queryset once per (database, kind) with sentinel ids that
mark where those two go, then only runs it and makes the row into models (`Model.from_db`, with the backend's
converters, as the ORM does). The visibility rule stays in `visible_to`: what is kept is its compiled text.

A compile whose parameters or columns are not what this expects (a later change to the rule or the models) is not
kept: that reader kind reads through the ORM as before. Never a different answer, at worst the old cost.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.db import connections, router
from django.db.models import Model

from flows.core import server_bound_cursor
from flows.models import Agent, Chain, Flow, sees_every_flow

__all__ = ["locked_chain"]

# Ids no row has (primary keys are positive): where they land in the compiled parameters, the real ids go.
_CHAIN_SENTINEL = -7_300_001
_READER_SENTINEL = -7_300_002
_MODELS: tuple[type[Model], ...] = (Chain, Agent, Flow)  # the row's column groups, in select_related's order


@dataclass(frozen=True)
class _Compiled:
    sql: str
    slots: tuple[Any, ...]  # each parameter: _CHAIN_SENTINEL / _READER_SENTINEL (filled per call) or a constant
    converters: dict[int, tuple[list[Any], Any]]  # column index -> (the backend's and field's converters, column)


_COMPILED: dict[tuple[str, str], _Compiled | None] = {}  # (database alias, reader kind) -> text, or None: the ORM


def _queryset(reader: Any) -> Any:
    chains = Chain.objects.select_related("agent__flow") if reader is None else Chain.objects.visible_to(reader)
    return chains.select_for_update(of=("self",))


def _kind(reader: Any) -> str:
    if reader is None:
        return "any"
    return "staff" if sees_every_flow(reader) else "owner"


def _sentinel_reader(reader: Any) -> Any:
    """An unsaved user with `reader`'s flags, whose id marks the reader's parameter."""
    return get_user_model()(pk=_READER_SENTINEL, is_staff=reader.is_staff, is_superuser=reader.is_superuser,
                            is_active=reader.is_active)


def _expected_columns() -> list[Any]:
    return [f for model in _MODELS for f in model._meta.concrete_fields]


def _compile(using: str, reader: Any) -> _Compiled | None:
    """The lock read's text for `reader`'s kind, or None when the compiled query is not the expected shape."""
    sample = None if reader is None else _sentinel_reader(reader)
    if _kind(sample) != _kind(reader):
        return None  # the rule asks something of the reader that the sentinel does not copy
    compiler = _queryset(sample).filter(pk=_CHAIN_SENTINEL).query.get_compiler(using)
    sql, params = compiler.as_sql()
    columns = [col for col, _, _ in compiler.select]
    if [getattr(col, "target", None) for col in columns] != _expected_columns():
        return None
    ids = [p for p in params if type(p) is int]
    readers_expected = 1 if _kind(reader) == "owner" else 0
    if ids.count(_CHAIN_SENTINEL) != 1 or ids.count(_READER_SENTINEL) != readers_expected:
        return None
    return _Compiled(sql=sql, slots=tuple(params), converters=compiler.get_converters(columns))


def _compiled(using: str, reader: Any) -> _Compiled | None:
    key = (using, _kind(reader))
    if key not in _COMPILED:
        _COMPILED[key] = _compile(using, reader)
    return _COMPILED[key]


def _params(compiled: _Compiled, chain_id: int, reader: Any) -> list[Any]:
    fill = {_CHAIN_SENTINEL: chain_id, _READER_SENTINEL: None if reader is None else reader.pk}
    return [fill.get(p, p) if type(p) is int else p for p in compiled.slots]


def _models(row: list[Any], using: str) -> Chain:
    """The chain of a row of the compiled read, its agent and flow set as select_related sets them."""
    made: list[Any] = []
    start = 0
    for model in _MODELS:
        fields = model._meta.concrete_fields
        made.append(model.from_db(using, [f.attname for f in fields], row[start:start + len(fields)]))
        start += len(fields)
    chain, agent, flow = made
    agent.flow = flow
    chain.agent = agent
    return chain


def locked_chain(chain_id: int, reader: Any = None) -> Chain:
    """The chain `chain_id` under its row lock (inside the caller's transaction), with agent and flow loaded;
    with `reader` (a user), a chain that user may not see is `Chain.DoesNotExist`, as `visible_to` decides."""
    using = router.db_for_write(Chain)
    compiled = _compiled(using, reader)
    if compiled is None:
        return _queryset(reader).get(pk=chain_id)
    connection = connections[using]
    with server_bound_cursor(connection) as cursor:
        cursor.execute(compiled.sql, _params(compiled, chain_id, reader))
        found = cursor.fetchone()
    if found is None:
        raise Chain.DoesNotExist("Chain matching query does not exist.")
    row = list(found)
    for index, (converters, column) in compiled.converters.items():
        for convert in converters:
            row[index] = convert(row[index], column, connection)
    return _models(row, using)
