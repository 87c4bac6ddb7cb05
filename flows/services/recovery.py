"""Runs a stopped worker left behind: every SummaryEvent still RUNNING when a worker starts.

With the embedded worker (memory broker) a crash or restart loses the queued and running tasks with the
process, so their events would say "running" forever. On start, a manual compaction (the user asked for it
and waits) is queued again: its task finishes the same event once. Any other run (turn, window, overflow,
byte guard) is closed as failed with the reason, and its chain is queued for a fresh summarization, which
covers whatever that run would have done.

Separate workers on Redis get killed tasks re-delivered (acks_late), so there only events older than twice
the broker's visibility timeout count as abandoned.

Gateway calls a stopped server left "running" (it died while waiting for the upstream, or between sending the
answer and writing its record) are closed as failed when a server starts: all of them with the memory broker
(one server process), else those older than the longest provider timeout (another server may still be waiting).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from flows.models import CallStatus, GatewayCall, Outcome, ProviderConfig, SummaryEvent, Trigger
from flows.services.queue import COMPACT_CHAIN, SUMMARIZE_CHAIN, enqueue

__all__ = ["Recovered", "events_recover_interrupted", "abandoned_after_seconds", "INTERRUPTED_REASON",
           "CALL_INTERRUPTED_REASON", "gateway_calls_close_interrupted", "calls_abandoned_after_seconds"]

INTERRUPTED_REASON = ("interrupted: the worker stopped before this run finished (closed when a worker started "
                      "again); the chain was queued for a new summarization")

CALL_INTERRUPTED_REASON = ("interrupted: the server stopped before this call was recorded (closed when a server "
                           "started again); an answer the agent received arrives with its next request")
# Beyond its provider's timeout no call is still running anywhere (the timeout is the call's whole deadline).
CALL_DEADLINE_MARGIN_SECONDS = 60.0

Send = Callable[[str, list[int]], object]


@dataclass(frozen=True)
class Recovered:
    requeued_compactions: int
    closed_as_failed: int

    def __str__(self) -> str:
        return (f"{self.requeued_compactions} manual compaction(s) queued again, "
                f"{self.closed_as_failed} interrupted run(s) closed as failed")


def abandoned_after_seconds() -> float:
    """0 with the in-process memory broker (no other worker can hold a task), else twice the visibility timeout
    (a killed task is re-delivered within one)."""
    if str(settings.CELERY_BROKER_URL).startswith("memory://"):
        return 0.0
    return 2 * float(settings.CELERY_BROKER_TRANSPORT_OPTIONS.get("visibility_timeout", 300))


def _send_by_name(name: str, args: list[int]) -> object:
    enqueue(name, *args)
    return None


def events_recover_interrupted(*, older_than_seconds: float = 0.0, send: Send = _send_by_name) -> Recovered:
    """Re-queue RUNNING manual compactions and close other RUNNING events older than `older_than_seconds`."""
    cutoff = timezone.now() - timedelta(seconds=older_than_seconds)
    running = SummaryEvent.objects.filter(outcome=Outcome.RUNNING, created_at__lte=cutoff)
    manual = list(running.filter(trigger=Trigger.MANUAL).values_list("chain_id", "pk"))
    with transaction.atomic():
        others = running.exclude(trigger=Trigger.MANUAL).select_for_update()
        chains = sorted(set(others.values_list("chain_id", flat=True)))
        closed = others.update(outcome=Outcome.FAILED, reason=INTERRUPTED_REASON, finished_at=timezone.now())
    for chain_id, event_id in manual:
        send(COMPACT_CHAIN, [chain_id, event_id])
    for chain_id in chains:
        send(SUMMARIZE_CHAIN, [chain_id])
    return Recovered(requeued_compactions=len(manual), closed_as_failed=closed)


def calls_abandoned_after_seconds() -> float:
    """0 with the in-process memory broker (one server process: whatever it ran died with it), else the longest
    provider timeout plus a margin (another server may still be waiting for an upstream)."""
    if str(settings.CELERY_BROKER_URL).startswith("memory://"):
        return 0.0
    longest = ProviderConfig.objects.aggregate(longest=Max("timeout_seconds"))["longest"]
    return float(longest or ProviderConfig._meta.get_field("timeout_seconds").default) + CALL_DEADLINE_MARGIN_SECONDS


def gateway_calls_close_interrupted(*, older_than_seconds: float = 0.0) -> int:
    """Close gateway calls a stopped server left "running" (started more than `older_than_seconds` ago) as
    failed, with the reason; returns how many."""
    now = timezone.now()
    stale = GatewayCall.objects.filter(status=CallStatus.RUNNING,
                                       created_at__lte=now - timedelta(seconds=older_than_seconds))
    return stale.update(status=CallStatus.FAILED, error=CALL_INTERRUPTED_REASON, finished_at=now)
