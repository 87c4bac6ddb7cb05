"""Reads for pages, the API and consumers. Every query that depends on who asks takes `user`."""
from __future__ import annotations

from django.db.models import F, OuterRef, Q, QuerySet, Subquery

from .models import Chain, ChainView, Flow, Message, SummaryEvent

__all__ = [
    "flows_visible_to", "chain_visible_to", "chains_visible_to", "flow_get_visible", "chain_get_visible",
    "chain_messages", "chain_raw_messages", "chain_view_latest", "chain_events", "chain_exists", "chain_message",
    "chain_last_seq", "event_instructions", "flow_chain_for_export", "chains_behind_their_view",
]


def flows_visible_to(*, user) -> QuerySet[Flow]:
    """Staff see every flow; everyone else only their own."""
    qs = Flow.objects.all()
    return qs if user.is_staff else qs.filter(owner=user)


def chains_visible_to(*, user) -> QuerySet[Chain]:
    qs = Chain.objects.select_related("agent__flow")
    return qs if user.is_staff else qs.filter(agent__flow__owner=user)


def chain_visible_to(*, chain_id: int, user) -> bool:
    return chains_visible_to(user=user).filter(pk=chain_id).exists()


def flow_get_visible(*, user, flow_id: int) -> Flow:
    """The flow if `user` may see it; Flow.DoesNotExist otherwise (another user's flow looks absent)."""
    return flows_visible_to(user=user).get(pk=flow_id)


def chain_get_visible(*, user, chain_id: int) -> Chain:
    return chains_visible_to(user=user).get(pk=chain_id)


def chain_messages(*, chain: Chain, after_seq: int = 0, limit: int | None = None) -> QuerySet[Message]:
    """Raw messages in seq order after `after_seq` (the live page's catch-up read)."""
    qs = chain.messages.filter(seq__gt=after_seq).order_by("seq")
    return qs[:limit] if limit is not None else qs


def chain_raw_messages(*, chain: Chain) -> list[dict]:
    """The whole raw chain in our canonical message format."""
    return [m.to_dict() for m in chain.messages.order_by("seq")]


def chain_view_latest(*, chain: Chain) -> ChainView | None:
    return chain.views.order_by("-version").first()


def chain_events(*, chain: Chain, limit: int = 200) -> QuerySet[SummaryEvent]:
    return chain.events.order_by("-id")[:limit]


def chain_exists(*, chain_id: int) -> bool:
    return Chain.objects.filter(pk=chain_id).exists()


def chain_last_seq(*, chain_id: int) -> int | None:
    """The chain's newest stored seq (the live heartbeat); None when the chain no longer exists."""
    return Chain.objects.filter(pk=chain_id).values_list("last_seq", flat=True).first()


def chain_message(*, chain: Chain, seq: int) -> Message | None:
    return chain.messages.filter(seq=seq).first()


def event_instructions(*, chain_id: int, event_id: int) -> str | None:
    """The focus instructions of a chain's event; None when that event does not exist (any more)."""
    return (SummaryEvent.objects.filter(pk=event_id, chain_id=chain_id)
            .values_list("instructions", flat=True).first())


def flow_chain_for_export(*, flow: Flow, chain_id: int | None) -> Chain | None:
    """The flow's chain with that id, or without an id the first agent's active chain."""
    chains = Chain.objects.filter(agent__flow=flow)
    if chain_id is not None:
        return chains.filter(pk=chain_id).first()
    return chains.filter(is_active=True).order_by("agent_id").first()


def chains_behind_their_view() -> list[int]:
    """Active chains holding raw messages their newest view does not cover (written while no worker ran)."""
    seen = ChainView.objects.filter(chain=OuterRef("pk"), version=OuterRef("view_version")).values("raw_seq_to")
    return list(Chain.objects.filter(is_active=True, last_seq__gt=0).annotate(seen=Subquery(seen[:1]))
                .filter(Q(seen__isnull=True) | Q(seen__lt=F("last_seq"))).order_by("pk").values_list("pk", flat=True))
