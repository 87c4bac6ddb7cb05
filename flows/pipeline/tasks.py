"""Celery tasks: each takes ids, calls exactly one service, and is safe to run twice.

Services queue them by name (`flows.core.queue`) with `transaction.on_commit`, so a task never runs
before the rows it reads exist. `acks_late` (settings) means a worker killed mid-task gets the task
re-delivered; the services' version check makes the re-run write at most one new view.
"""
from __future__ import annotations

import logging
import urllib.error
from typing import Any

from celery import Task, shared_task
from celery.signals import worker_ready

from flows.core import COMPACT_CHAIN, FIT_CHAIN, SUMMARIZE_CHAIN, relay_current
from flows.models import Chain, SummaryEvent
from flows.pipeline.compaction import chain_compact
from flows.pipeline.fitting import chain_fit
from flows.pipeline.recovery import abandoned_after_seconds, events_recover_interrupted
from flows.pipeline.summarization import chain_summarize

__all__ = ["RelayableTask", "summarize_chain_task", "compact_chain_task", "fit_chain_task", "RELAYED_TASKS",
           "recover_interrupted_runs"]

log = logging.getLogger(__name__)


def _chain_exists(chain_id: int) -> bool:
    return Chain.objects.filter(pk=chain_id).exists()


def _event_instructions(chain_id: int, event_id: int) -> str | None:
    """The focus instructions of a chain's event; None when that event does not exist (any more)."""
    return (SummaryEvent.objects.filter(pk=event_id, chain_id=chain_id)
            .values_list("instructions", flat=True).first())


class RelayableTask(Task):
    """Queued on the running server's worker when this process relays to one (flows.core.relay), else as usual."""

    def apply_async(self, args: Any = None, kwargs: Any = None, **options: Any) -> Any:
        relay = relay_current()
        if relay is None or kwargs:
            return super().apply_async(args, kwargs, **options)
        try:
            relay.queue_task(self.name, list(args or ()))
        except (urllib.error.URLError, OSError, ValueError):
            # The server went away: it queues chains whose view is behind when it starts again.
            log.warning("could not hand %s%s to the running server", self.name, tuple(args or ()), exc_info=True)
        return None


@shared_task(name=SUMMARIZE_CHAIN, base=RelayableTask)
def summarize_chain_task(chain_id: int) -> int | None:
    """Summarize after an agent turn. Returns the recorded event's id (None when nothing changed).

    It first clears the chain's coalescing flag (`Chain.summary_queued_at`, set by the append that queued it),
    then loads the state: a turn committed before the clear is in that state, a turn after it queues a new run."""
    if not Chain.objects.filter(pk=chain_id).update(summary_queued_at=None):
        log.info("summarize: chain %s is gone", chain_id)
        return None
    event = chain_summarize(chain_id=chain_id, trigger="turn", claim=True)  # one run per state, however queued
    return event.pk if event else None


@shared_task(name=COMPACT_CHAIN, base=RelayableTask)
def compact_chain_task(chain_id: int, event_id: int | None = None, preview_id: int | None = None) -> int | None:
    """Manual compaction; the RUNNING event was created by the request, so a re-delivery finishes it once.
    `preview_id`: the dry run it applies (reused when the chain has not moved since)."""
    if not _chain_exists(chain_id):
        log.info("compact: chain %s is gone", chain_id)
        return None
    if event_id is not None:
        instructions = _event_instructions(chain_id, event_id)
        if instructions is None:
            log.info("compact: event %s of chain %s is gone", event_id, chain_id)
            return None
    else:
        instructions = ""
    return chain_compact(chain_id=chain_id, instructions=instructions, event_id=event_id, preview_id=preview_id).pk


@shared_task(name=FIT_CHAIN, base=RelayableTask)
def fit_chain_task(chain_id: int) -> int | None:
    """Fit the current view to the model's window on demand."""
    if not _chain_exists(chain_id):
        return None
    event = chain_fit(chain_id=chain_id, trigger="window")
    return event.pk if event else None


# What another process may queue here through the relay: name -> (task, fewest and most arguments).
RELAYED_TASKS: dict[str, tuple[Task, int, int]] = {
    "flows.summarize_chain": (summarize_chain_task, 1, 1),
    "flows.compact_chain": (compact_chain_task, 1, 3),
    "flows.fit_chain": (fit_chain_task, 1, 1),
}


@worker_ready.connect
def recover_interrupted_runs(**kwargs: Any) -> None:
    """A worker process starting (the embedded one is handled by `manage.py run`): runs crashed workers left
    RUNNING with no task left to finish them are queued again or closed (flows.pipeline.recovery)."""
    recovered = events_recover_interrupted(older_than_seconds=abandoned_after_seconds())
    if recovered.requeued_compactions or recovered.closed_as_failed:
        log.warning("after the last stop: %s", recovered)
