"""Per-process copies of configuration rows, for lookups every gateway call makes.

Providers, model windows, settings rows and learned token ratios are rarely edited, yet each call read them again
(a query each, most of its cost in building the SQL and the model instances). A copy keeps them as last read: a
save or delete in this process drops it (now, and again when the transaction commits, since another thread may
read the old rows back meanwhile); another process's edit (another server, a `manage.py` command) is seen within
TABLE_COPY_SECONDS. Inside a transaction the table is read instead, so a write that is rolled back (a test's, say)
never lingers in a copy, and a transaction sees its own writes.

`TableCopy` holds a whole small table (providers, windows); `KeyedCopy` holds what was read per key, for tables
that grow with use (one flow's settings, one provider and model's ratio).
"""
from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

from django.db import models, transaction
from django.db.models.signals import post_delete, post_save

__all__ = ["TableCopy", "KeyedCopy", "TABLE_COPY_SECONDS", "outside_transactions"]

TABLE_COPY_SECONDS = 2.0
KEYED_COPY_MAX_KEYS = 4096  # a server serving more flows than this keeps only the fresh ones
Row = TypeVar("Row", bound=models.Model)
Key = TypeVar("Key", bound=Hashable)
Value = TypeVar("Value")


def outside_transactions() -> bool:
    """True where a copy may be used: not inside a transaction (which reads the table itself)."""
    return not transaction.get_connection().in_atomic_block


class _Copy:
    """What both copies share: dropped by an edit of `model` in this process, and a read that overlapped a drop
    is not kept (its rows may be the old ones)."""

    def __init__(self, model: type[models.Model], name: str) -> None:
        self._lock = threading.Lock()
        self._generation = 0  # bumped by every drop
        post_save.connect(self.changed, sender=model, dispatch_uid=f"table_copy_{name}_save", weak=False)
        post_delete.connect(self.changed, sender=model, dispatch_uid=f"table_copy_{name}_delete", weak=False)

    def changed(self, **_: Any) -> None:
        """Drop the copy (post_save / post_delete receiver): now, and again when the transaction commits."""
        self.drop()
        transaction.on_commit(self.drop)

    def drop(self) -> None:
        with self._lock:
            self._generation += 1
            self._clear()

    def _clear(self) -> None:
        raise NotImplementedError

    def _generation_now(self) -> int:
        with self._lock:
            return self._generation


def _fresh(read_at: float) -> bool:
    return time.monotonic() - read_at <= TABLE_COPY_SECONDS


class TableCopy(_Copy, Generic[Row]):
    def __init__(self, model: type[Row], name: str) -> None:
        super().__init__(model, name)
        self._model = model
        self._read: tuple[float, list[Row]] | None = None

    def _clear(self) -> None:
        self._read = None

    def first(self, test: Callable[[Row], bool], *, reread_on_miss: bool = False) -> Row | None:
        """A copy of the first row (by pk) passing `test`, from the copy (call only `outside_transactions()`).
        `reread_on_miss`: a row not found is looked for again in the table (one another process may just have
        created, e.g. a provider named in a request)."""
        found = next((row for row in self._rows() if test(row)), None)
        if found is None and reread_on_miss:
            found = next((row for row in self._reload() if test(row)), None)
        return None if found is None else copy.copy(found)  # callers may change theirs; the copy stays as read

    def _rows(self) -> list[Row]:
        with self._lock:
            read = self._read
        return read[1] if read is not None and _fresh(read[0]) else self._reload()

    def _reload(self) -> list[Row]:
        generation = self._generation_now()
        rows = list(self._model._default_manager.order_by("pk"))
        with self._lock:
            if generation == self._generation:
                self._read = (time.monotonic(), rows)
        return rows


class KeyedCopy(_Copy, Generic[Key, Value]):
    def __init__(self, model: type[models.Model], name: str) -> None:
        super().__init__(model, name)
        self._values: dict[Key, tuple[float, Value]] = {}

    def _clear(self) -> None:
        self._values.clear()

    def get(self, key: Key, read: Callable[[], Value]) -> Value:
        """`key`'s value from the copy while fresh, else `read()` (kept for the next call); inside a transaction
        always `read()`. Values are copied out: callers may change theirs."""
        if not outside_transactions():
            return read()
        with self._lock:
            known = self._values.get(key)
        if known is not None and _fresh(known[0]):
            return copy.copy(known[1])
        generation = self._generation_now()
        value = read()
        self._keep(key, value, generation)
        return copy.copy(value)

    def put(self, key: Key, value: Value) -> None:
        """What this process just wrote and committed (e.g. a ratio it learned): the next read uses it."""
        self._keep(key, value, self._generation_now())

    def _keep(self, key: Key, value: Value, generation: int) -> None:
        with self._lock:
            if generation != self._generation:
                return
            if len(self._values) >= KEYED_COPY_MAX_KEYS:  # bounded: what is stale goes first, else everything
                self._values = {k: v for k, v in self._values.items() if _fresh(v[0])}
                if len(self._values) >= KEYED_COPY_MAX_KEYS:
                    self._values.clear()
            self._values[key] = (time.monotonic(), value)
