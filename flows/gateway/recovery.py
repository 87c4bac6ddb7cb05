"""Gateway calls a stopped server left "running": closed as failed, with the reason, when a server starts, and
by the periodic sweep (flows/gateway/sweep.py) once older than any call can run.

A server dies while waiting for the upstream, or between sending the answer and writing its record. With the
memory broker (one server process) every running call is closed; else those older than the longest provider
timeout (another server may still be waiting). The chain loses nothing: the agent's next request brings the
answer it received.
"""
from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Max
from django.utils import timezone

from flows.config import settings_for
from flows.core import FIELDS_BY_NAME, PROFILES
from flows.models import CallStatus, GatewayCall, ProviderConfig, SummarizerSettings

__all__ = ["CALL_INTERRUPTED_REASON", "CALL_ABANDONED_REASON", "gateway_calls_close_interrupted",
           "calls_abandoned_after_seconds", "longest_call_seconds"]

CALL_INTERRUPTED_REASON = ("interrupted: the server stopped before this call was recorded (closed when a server "
                           "started again); an answer the agent received arrives with its next request")
CALL_ABANDONED_REASON = ("abandoned: still running longer than the longest provider timeout, summarizing deadline "
                         "and a minute (closed by the periodic sweep); an answer the agent received arrives with its "
                         "next request")
# A call summarizes (manage mode's fit, an overflow's compactions) within its settings' summary_deadline_seconds,
# then waits on the upstream within its provider's timeout, whose clock stops while it compacts: beyond the two no
# call is still running anywhere. The margin covers the bookkeeping around them.
CALL_DEADLINE_MARGIN_SECONDS = 60.0


def calls_abandoned_after_seconds() -> float:
    """0 with the in-process memory broker (one server process: whatever it ran died with it), else the longest
    provider timeout plus a margin (another server may still be waiting for an upstream)."""
    if str(settings.CELERY_BROKER_URL).startswith("memory://"):
        return 0.0
    return longest_call_seconds()


def _longest_summarizing_seconds() -> float:
    """The longest any call may spend summarizing: the largest `summary_deadline_seconds` of every profile's
    defaults and every saved row; a deadline of 0 (none) counts as the setting's largest value."""
    deadlines = [settings_for(profile=p).summary_deadline_seconds for p in PROFILES]
    deadlines += SummarizerSettings.objects.values_list("summary_deadline_seconds", flat=True)
    unbounded = float(FIELDS_BY_NAME["summary_deadline_seconds"].maximum or 0)
    return max(float(d) if d else unbounded for d in deadlines)


def longest_call_seconds() -> float:
    """The longest provider timeout, plus the longest summarizing deadline, plus a margin: no call anywhere is
    still running after that long."""
    longest = ProviderConfig.objects.aggregate(longest=Max("timeout_seconds"))["longest"]
    timeout = float(longest or ProviderConfig._meta.get_field("timeout_seconds").default)
    return timeout + _longest_summarizing_seconds() + CALL_DEADLINE_MARGIN_SECONDS


def gateway_calls_close_interrupted(*, older_than_seconds: float = 0.0, now: datetime | None = None,
                                    reason: str = CALL_INTERRUPTED_REASON) -> int:
    """Close gateway calls left "running" (started more than `older_than_seconds` before `now`) as failed, with
    the reason; returns how many."""
    now = now or timezone.now()
    stale = GatewayCall.objects.filter(status=CallStatus.RUNNING,
                                       created_at__lte=now - timedelta(seconds=older_than_seconds))
    return stale.update(status=CallStatus.FAILED, error=reason, finished_at=now)
