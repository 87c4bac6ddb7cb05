"""What a flow is doing, from what happened rather than from the status an agent may never report.

A gateway flow stays "created" forever (no agent reports a status through the gateway) and a demo killed with
its server stays "running"; the flows list showed both as stored. The list now says what the rows show:
*failed* when the flow says so or its newest summarization failed, *finished* when the agent said so,
*active* while something was written in the last ACTIVE_SECONDS, else *idle since* the last write.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from flows.models import FlowStatus, Outcome

__all__ = ["ACTIVE_SECONDS", "Activity", "flow_activity"]

ACTIVE_SECONDS = 120  # a demo turn, a gateway call or a replay step comes well within this


@dataclass(frozen=True)
class Activity:
    state: str  # active | idle | failed | finished (the badge's class)
    since: datetime | None = None  # for idle: the last write


def flow_activity(*, status: str, last_activity: datetime, newest_event_outcome: str | None,
                  now: datetime) -> Activity:
    if status == FlowStatus.FAILED or newest_event_outcome == Outcome.FAILED:
        return Activity("failed")
    if status == FlowStatus.FINISHED:
        return Activity("finished", last_activity)
    if now - last_activity <= timedelta(seconds=ACTIVE_SECONDS):
        return Activity("active")
    return Activity("idle", last_activity)
