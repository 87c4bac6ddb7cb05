"""Background work the services ask for, queued by Celery task name once the current transaction commits.

The services sit below the tasks (a task calls one service), so they never import `flows.tasks`: they name
the task instead, and Celery's registry finds it (`flows.tasks` registers these names). Queuing after
commit means a worker never looks for rows that are not visible yet, and a rolled-back write queues nothing.
"""
from __future__ import annotations

from typing import Any

from celery import current_app
from django.db import transaction

__all__ = ["SUMMARIZE_CHAIN", "COMPACT_CHAIN", "FIT_CHAIN", "TASK_NAMES", "enqueue", "enqueue_on_commit"]

SUMMARIZE_CHAIN = "flows.summarize_chain"  # after an agent turn: summarize, then fit to the window
COMPACT_CHAIN = "flows.compact_chain"  # a manual "compact now" whose RUNNING event already exists
FIT_CHAIN = "flows.fit_chain"  # fit the current view to the model's window on demand
TASK_NAMES = (SUMMARIZE_CHAIN, COMPACT_CHAIN, FIT_CHAIN)


def enqueue(task_name: str, *args: Any) -> None:
    """Queue the registered task now (it honours the app's eager mode, unlike `send_task`)."""
    if task_name not in TASK_NAMES:
        raise ValueError(f"unknown task {task_name!r}")
    current_app.tasks[task_name].delay(*args)


def enqueue_on_commit(task_name: str, *args: Any) -> None:
    """Queue the task when the current transaction commits (at once outside a transaction)."""
    if task_name not in TASK_NAMES:
        raise ValueError(f"unknown task {task_name!r}")
    transaction.on_commit(lambda: enqueue(task_name, *args))
