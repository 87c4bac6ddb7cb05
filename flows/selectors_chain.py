"""Reads for the chain page's extra views: its events with cost, one event's summarizer calls, view versions.

Only reads; the chain itself is resolved (and access-checked) by `selectors_pages.chain_for_page`.
"""
from __future__ import annotations

from typing import Any

from django.db.models import Count, Sum

from .models import Chain, ChainView, LLMCall, SummaryEvent
from .selectors import chain_raw_messages
from .selectors_pages import EVENTS_SHOWN  # one limit for the chain page's event list, wherever it is read

__all__ = ["EVENTS_SHOWN", "chain_events_page", "chain_event_detail", "chain_view_versions", "chain_view_version",
           "chain_export_messages"]


def chain_events_page(*, chain: Chain, limit: int | None = EVENTS_SHOWN) -> tuple[list[SummaryEvent], int]:
    """The newest `limit` events (all with None) with their summed LLM cost (`cost_usd`) and number of model
    calls (`llm_rows`), and how many events the chain has in all."""
    qs = SummaryEvent.objects.filter(chain=chain)
    rows = qs.annotate(cost_usd=Sum("llm_calls__cost_usd"), llm_rows=Count("llm_calls")).order_by("-id")
    return list(rows if limit is None else rows[:limit]), qs.count()


def chain_event_detail(*, chain: Chain, event_id: int) -> tuple[SummaryEvent, list[LLMCall]] | None:
    """One event of the chain and the model calls it made, oldest first; None when it is not this chain's."""
    event = SummaryEvent.objects.filter(chain=chain, pk=event_id).select_related("view").first()
    if event is None:
        return None
    return event, list(LLMCall.objects.filter(event=event).select_related("provider").order_by("id"))


def chain_view_versions(*, chain: Chain) -> list[dict[str, Any]]:
    """Every stored view version, newest first, without message bodies."""
    return list(ChainView.objects.filter(chain=chain).order_by("-version")
                .values("version", "raw_seq_to", "byte_size", "token_count", "created_at"))


def chain_view_version(*, chain: Chain, version: int) -> ChainView | None:
    return ChainView.objects.filter(chain=chain, version=version).first()


def chain_export_messages(*, chain: Chain) -> list[dict[str, Any]]:
    """The raw chain in the canonical format, what every export format is built from."""
    return chain_raw_messages(chain=chain)
