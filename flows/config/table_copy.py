"""A per-process copy of a small configuration table, for lookups every gateway call makes.

Providers, model windows and settings rows are few and rarely edited, yet each call read them again (a query
each, most of its cost in building the SQL). A `TableCopy` keeps the rows as last read: a save or delete in this
process drops the copy (now, and again when the transaction commits, since another thread may read the old
rows back meanwhile); another process's edit (another server, a `manage.py` command) is seen within
TABLE_COPY_SECONDS. Inside a transaction the table is read instead, so a write that is rolled back (a test's,
say) never lingers in the copy, and a transaction sees its own writes.
"""
from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from django.db import models, transaction
from django.db.models.signals import post_delete, post_save

__all__ = ["TableCopy", "TABLE_COPY_SECONDS"]

TABLE_COPY_SECONDS = 2.0
Row = TypeVar("Row", bound=models.Model)


class TableCopy(Generic[Row]):
    def __init__(self, model: type[Row], name: str) -> None:
        self._model = model
        self._lock = threading.Lock()
        self._read: tuple[float, list[Row]] | None = None
        self._generation = 0  # bumped by every drop: a read that overlapped one is not kept
        post_save.connect(self.changed, sender=model, dispatch_uid=f"table_copy_{name}_save", weak=False)
        post_delete.connect(self.changed, sender=model, dispatch_uid=f"table_copy_{name}_delete", weak=False)

    def changed(self, **_: Any) -> None:
        """Drop the copy (post_save / post_delete receiver): now, and again when the transaction commits."""
        self.drop()
        transaction.on_commit(self.drop)

    def drop(self) -> None:
        with self._lock:
            self._read = None
            self._generation += 1

    def usable(self) -> bool:
        """False inside a transaction: the caller reads the table itself."""
        return not transaction.get_connection().in_atomic_block

    def first(self, test: Callable[[Row], bool], *, reread_on_miss: bool = False) -> Row | None:
        """A copy of the first row (by pk) passing `test`, from the copy (call only where `usable()`).
        `reread_on_miss`: a row not found is looked for again in the table (one another process may just have
        created, e.g. a provider named in a request)."""
        found = next((row for row in self._rows() if test(row)), None)
        if found is None and reread_on_miss:
            found = next((row for row in self._reload() if test(row)), None)
        return None if found is None else copy.copy(found)  # callers may change theirs; the copy stays as read

    def _rows(self) -> list[Row]:
        with self._lock:
            read = self._read
        if read is not None and time.monotonic() - read[0] <= TABLE_COPY_SECONDS:
            return read[1]
        return self._reload()

    def _reload(self) -> list[Row]:
        with self._lock:
            generation = self._generation
        rows = list(self._model._default_manager.order_by("pk"))
        with self._lock:
            if generation == self._generation:
                self._read = (time.monotonic(), rows)
        return rows
