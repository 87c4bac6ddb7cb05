"""Flows and agents: what a chain belongs to (an agent of a flow, each agent with one active chain)."""
from __future__ import annotations

from django.db import transaction

from flows.models import AGENT_TYPES, Agent, Chain, Flow, FlowStatus, Profile

__all__ = ["flow_create", "flow_set_status", "agent_create"]


def _plain(text: str) -> str:
    """PostgreSQL text columns cannot hold U+0000 (a 500 otherwise); in a title or model name it means nothing."""
    return text.replace("\x00", "")


def flow_create(*, owner, title: str, model_name: str = "", session_id: str = "") -> Flow:
    """A flow; `session_id` (the gateway's, validated there) makes it the owner's one flow of that session."""
    return Flow.objects.create(owner=owner, title=(_plain(title or "") or "Untitled flow")[:200],
                               model_name=_plain(model_name)[:200], session_id=session_id)


def flow_set_status(*, flow_id: int, status: str) -> None:
    """The status an agent reports for its flow (running, waiting, finished, failed)."""
    if status not in FlowStatus.values:
        raise ValueError(f"unknown flow status {status!r}")
    Flow.objects.filter(pk=flow_id).update(status=status)


def agent_create(*, flow: Flow, agent_type: str, profile: str = Profile.AGENT) -> Agent:
    """An agent and its active chain (the id template is detected later, from the ids the agent uses)."""
    if agent_type not in AGENT_TYPES:
        raise ValueError(f"unknown agent type {agent_type!r}")
    if profile not in Profile.values:
        raise ValueError(f"unknown profile {profile!r}")
    with transaction.atomic():
        agent = Agent.objects.create(flow=flow, agent_type=agent_type, profile=profile)
        Chain.objects.create(agent=agent)
    return agent
