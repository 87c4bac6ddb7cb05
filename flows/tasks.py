"""Celery tasks: each takes ids, calls exactly one service, and is safe to run twice.

Services queue them by name (`flows.services.queue`) with `transaction.on_commit`, so a task never runs
before the rows it reads exist. `acks_late` (settings) means a worker killed mid-task gets the task
re-delivered; the services' version check makes the re-run write at most one new view.
"""
from __future__ import annotations

import logging

from celery import shared_task

from flows import selectors
from flows.services import chain_compact, chain_fit, chain_summarize
from flows.services.queue import COMPACT_CHAIN, FIT_CHAIN, SUMMARIZE_CHAIN

__all__ = ["summarize_chain_task", "compact_chain_task", "fit_chain_task"]

log = logging.getLogger(__name__)


@shared_task(name=SUMMARIZE_CHAIN)
def summarize_chain_task(chain_id: int) -> int | None:
    """Summarize after an agent turn. Returns the recorded event's id (None when nothing changed)."""
    if not selectors.chain_exists(chain_id=chain_id):
        log.info("summarize: chain %s is gone", chain_id)
        return None
    event = chain_summarize(chain_id=chain_id, trigger="turn")
    return event.pk if event else None


@shared_task(name=COMPACT_CHAIN)
def compact_chain_task(chain_id: int, event_id: int | None = None) -> int | None:
    """Manual compaction; the RUNNING event was created by the request, so a re-delivery finishes it once."""
    if not selectors.chain_exists(chain_id=chain_id):
        log.info("compact: chain %s is gone", chain_id)
        return None
    if event_id is not None:
        instructions = selectors.event_instructions(chain_id=chain_id, event_id=event_id)
        if instructions is None:
            log.info("compact: event %s of chain %s is gone", event_id, chain_id)
            return None
    else:
        instructions = ""
    return chain_compact(chain_id=chain_id, instructions=instructions, event_id=event_id).pk


@shared_task(name=FIT_CHAIN)
def fit_chain_task(chain_id: int) -> int | None:
    """Fit the current view to the model's window on demand."""
    if not selectors.chain_exists(chain_id=chain_id):
        return None
    event = chain_fit(chain_id=chain_id, trigger="window")
    return event.pk if event else None
