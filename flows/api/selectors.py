"""Reads for the JSON API. Who may see what is `Flow.objects.visible_to` / `Chain.objects.visible_to`."""
from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from flows.models import Chain, Flow, Message, SummaryEvent

__all__ = ["flow_visible", "chain_visible", "chain_messages", "chain_events", "flow_chain_for_export"]

EVENTS_LISTED = 200


def flow_visible(*, user: Any, flow_id: int) -> Flow:
    """The flow if `user` may see it; Flow.DoesNotExist otherwise (another user's flow looks absent)."""
    return Flow.objects.visible_to(user).get(pk=flow_id)


def chain_visible(*, user: Any, chain_id: int) -> Chain:
    """The chain if `user` may see it; Chain.DoesNotExist otherwise."""
    return Chain.objects.visible_to(user).get(pk=chain_id)


def chain_messages(*, chain: Chain, after_seq: int = 0, limit: int | None = None) -> QuerySet[Message]:
    """Raw messages in seq order after `after_seq` (the live page's catch-up read)."""
    qs = chain.messages.filter(seq__gt=after_seq).order_by("seq")
    return qs[:limit] if limit is not None else qs


def chain_events(*, chain: Chain, limit: int = EVENTS_LISTED) -> list[SummaryEvent]:
    """The newest events with their model calls' cost (the same rows the chain page lists)."""
    return list(SummaryEvent.objects.filter(chain=chain).newest_with_cost()[:limit])


def flow_chain_for_export(*, flow: Flow, chain_id: int | None) -> Chain | None:
    """The flow's chain with that id, or without an id the first agent's active chain."""
    chains = Chain.objects.filter(agent__flow=flow)
    if chain_id is not None:
        return chains.filter(pk=chain_id).first()
    return chains.filter(is_active=True).order_by("agent_id").first()
