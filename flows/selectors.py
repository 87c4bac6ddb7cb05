"""Reads for pages, the API and consumers. Every query that depends on who asks takes `user`."""
from __future__ import annotations

from django.db.models import QuerySet

from .models import Chain, Flow

__all__ = ["flows_visible_to", "chain_visible_to", "chains_visible_to"]


def flows_visible_to(*, user) -> QuerySet[Flow]:
    """Staff see every flow; everyone else only their own."""
    qs = Flow.objects.all()
    return qs if user.is_staff else qs.filter(owner=user)


def chains_visible_to(*, user) -> QuerySet[Chain]:
    qs = Chain.objects.select_related("agent__flow")
    return qs if user.is_staff else qs.filter(agent__flow__owner=user)


def chain_visible_to(*, chain_id: int, user) -> bool:
    return chains_visible_to(user=user).filter(pk=chain_id).exists()
