"""Runs a stopped worker left behind: every SummaryEvent still RUNNING when a worker starts.

With the embedded worker (memory broker) a crash or restart loses the queued and running tasks with the
process, so their events would say "running" forever. On start, a manual compaction (the user asked for it
and waits) is queued again: its task finishes the same event once. Any other run (turn, window, overflow,
byte guard) is closed as failed with the reason, and its chain is queued for a fresh summarization, which
covers whatever that run would have done.

Separate workers on Redis get killed tasks re-delivered (acks_late), so there only events older than twice
the broker's visibility timeout count as abandoned.

The periodic sweep (`events_close_abandoned`, run by flows/gateway/sweep.py in every server process) closes, in
any deployment, events still RUNNING longer than any run can take, whether or not a worker ever starts again.

`chains_behind_their_view` names the chains holding raw messages their newest view does not cover (written
while no worker ran), which a starting server queues for summarization, except those the recovery queued
already. A queued summarization claims its chain's state (`runs.event_claim`, for `claim_lease_seconds`), so a
second run of the same state (a duplicate in the queue, a re-delivery) calls no model.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, OuterRef, Q, Subquery
from django.utils import timezone

from flows.core import COMPACT_CHAIN, NOT_QUEUED_REASON, SUMMARIZE_CHAIN, BrokerUnreachable, enqueue
from flows.models import Chain, ChainView, Outcome, SummaryEvent, Trigger

__all__ = ["Recovered", "events_recover_interrupted", "abandoned_after_seconds", "INTERRUPTED_REASON",
           "chains_behind_their_view", "events_close_abandoned", "ABANDONED_REASON", "not_queued_requeue",
           "REQUEUED_REASON", "claim_lease_seconds", "summaries_requeue_stale"]

INTERRUPTED_REASON = ("interrupted: the worker stopped before this run finished (closed when a worker started "
                      "again); the chain was queued for a new summarization")

ABANDONED_REASON = ("abandoned: still running longer than any run can take (closed by the periodic sweep); "
                    "the previous view stays, the next turn or compaction starts afresh")

REQUEUED_REASON = NOT_QUEUED_REASON + "; queued again once the broker answered"

Send = Callable[[str, list[int]], object]


@dataclass(frozen=True)
class Recovered:
    requeued_compactions: int
    closed_as_failed: int
    summarized: tuple[int, ...] = ()  # chains queued for a fresh summarization (not to be queued again)

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
        flagged = Chain.objects.filter(summary_queued_at__lte=cutoff).select_for_update()
        chains = sorted(set(others.values_list("chain_id", flat=True)) | set(flagged.values_list("pk", flat=True)))
        closed = others.update(outcome=Outcome.FAILED, reason=INTERRUPTED_REASON, finished_at=timezone.now())
        Chain.objects.filter(pk__in=chains).update(summary_queued_at=timezone.now())  # queued below: coalesce on it
    for chain_id, event_id in manual:
        send(COMPACT_CHAIN, [chain_id, event_id])
    for chain_id in chains:
        send(SUMMARIZE_CHAIN, [chain_id])
    return Recovered(requeued_compactions=len(manual), closed_as_failed=closed, summarized=tuple(chains))


def summaries_requeue_stale(*, older_than_seconds: float, now: datetime | None = None) -> int:
    """Chains whose coalescing flag (`Chain.summary_queued_at`) is older than `older_than_seconds`: the task it
    stands for was lost (a worker or broker that died with it), and while the flag stands every turn coalesces
    into it. Each is queued again with a fresh flag; an UPDATE per chain that only one sweeping process wins.
    Returns how many were queued; stops at the first broker refusal (the flag is cleared, the next turn queues)."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=older_than_seconds)
    done = 0
    for chain_id in Chain.objects.filter(summary_queued_at__lte=cutoff).order_by("pk").values_list("pk", flat=True):
        if not Chain.objects.filter(pk=chain_id, summary_queued_at__lte=cutoff).update(summary_queued_at=now):
            continue  # another process re-queued it, or its run started meanwhile
        try:
            enqueue(SUMMARIZE_CHAIN, chain_id)
        except BrokerUnreachable:
            Chain.objects.filter(pk=chain_id, summary_queued_at=now).update(summary_queued_at=None)
            break
        done += 1
    return done


def events_close_abandoned(*, older_than_seconds: float, now: datetime | None = None) -> int:
    """Close every RUNNING event (manual compactions too) created more than `older_than_seconds` before `now` as
    failed "abandoned"; returns how many. A run that was only slow and still saves overwrites this end state
    with its own (event_finish), so the sweep never loses a result."""
    now = now or timezone.now()
    stale = SummaryEvent.objects.filter(outcome=Outcome.RUNNING,
                                        created_at__lte=now - timedelta(seconds=older_than_seconds))
    return stale.update(outcome=Outcome.FAILED, reason=ABANDONED_REASON, finished_at=now)


def not_queued_requeue() -> int:
    """The outbox of summarizations the broker refused (`ingest.append.not_queued_record`): each waiting chain is
    queued again and its event says so; stops at the first refusal (the next pass tries again). Returns how many."""
    waiting = SummaryEvent.objects.filter(outcome=Outcome.FAILED, reason=NOT_QUEUED_REASON)
    done = 0
    for chain_id in sorted(set(waiting.values_list("chain_id", flat=True))):
        try:
            enqueue(SUMMARIZE_CHAIN, chain_id)
        except BrokerUnreachable:
            break
        waiting.filter(chain_id=chain_id).update(reason=REQUEUED_REASON)
        done += 1
    return done


def chains_behind_their_view(*, queued: tuple[int, ...] = ()) -> list[int]:
    """Active chains holding raw messages their newest view does not cover (written while no worker ran),
    except those `queued` already (`Recovered.summarized`: a chain is never queued twice for one state)."""
    seen = ChainView.objects.filter(chain=OuterRef("pk"), version=OuterRef("view_version")).values("raw_seq_to")
    return list(Chain.objects.filter(is_active=True, last_seq__gt=0).exclude(pk__in=queued)
                .annotate(seen=Subquery(seen[:1])).filter(Q(seen__isnull=True) | Q(seen__lt=F("last_seq")))
                .order_by("pk").values_list("pk", flat=True))


def claim_lease_seconds() -> float | None:
    """How long a running summarization holds its chain's state against a second run of the same state: for
    ever on the memory broker (a run left by a dead process is closed when a worker starts), else the broker's
    visibility timeout (after it the task is re-delivered: the run is taken for dead)."""
    if str(settings.CELERY_BROKER_URL).startswith("memory://"):
        return None
    return float(settings.CELERY_BROKER_TRANSPORT_OPTIONS.get("visibility_timeout", 300))
