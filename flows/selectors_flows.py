"""Reads for the flows list and the flow page beyond sizes: summarizer cost, filtered memory notes, timeline."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, Sum

from .models import Chain, Flow, LLMCall, MemoryNote, SummaryEvent

__all__ = ["MAX_LIVE_CHAINS", "NOTES_SHOWN", "TIMELINE_SHOWN", "FlowCost", "NoteFilter", "flow_costs",
           "flow_notes", "flow_timeline", "flow_live_chain_ids", "flow_cost", "flow_extras"]

NOTES_SHOWN = 500
TIMELINE_SHOWN = 100
MAX_LIVE_CHAINS = 20  # the flow page listens to at most this many active chains


@dataclass(frozen=True)
class FlowCost:
    usd: float = 0.0
    calls: int = 0


def flow_costs(*, flow_ids: list[int]) -> dict[int, FlowCost]:
    """What the summarizer's model calls cost per flow (LLMCall.cost_usd), with the number of calls."""
    rows = (LLMCall.objects.filter(event__chain__agent__flow_id__in=flow_ids)
            .values("event__chain__agent__flow_id").annotate(usd=Sum("cost_usd"), calls=Count("id")))
    return {r["event__chain__agent__flow_id"]: FlowCost(usd=r["usd"] or 0.0, calls=r["calls"]) for r in rows}


@dataclass
class NoteFilter:
    kind: str = ""
    q: str = ""
    kinds: list[tuple[str, int]] = field(default_factory=list)  # every kind of the flow with its count
    total: int = 0
    matched: int = 0

    @property
    def active(self) -> bool:
        return bool(self.kind or self.q)


def flow_notes(*, flow: Flow, kind: str = "", q: str = "") -> tuple[list[MemoryNote], NoteFilter]:
    """The flow's memory notes, newest first, of one kind and/or containing `q` (case-insensitive)."""
    counts = list(MemoryNote.objects.filter(flow=flow).values("kind").annotate(n=Count("id")).order_by("kind"))
    kinds = [(c["kind"], c["n"]) for c in counts]
    notes = MemoryNote.objects.filter(flow=flow)
    kind = kind if kind in {k for k, _ in kinds} else ""
    if kind:
        notes = notes.filter(kind=kind)
    if q:
        notes = notes.filter(text__icontains=q)
    info = NoteFilter(kind=kind, q=q, kinds=kinds, total=sum(n for _, n in kinds), matched=notes.count())
    return list(notes.order_by("-id")[:NOTES_SHOWN]), info


def flow_timeline(*, flow: Flow) -> list[SummaryEvent]:
    return list(SummaryEvent.objects.filter(chain__agent__flow=flow).select_related("chain__agent")
                .order_by("-id")[:TIMELINE_SHOWN])


def flow_live_chain_ids(*, flow: Flow) -> list[int]:
    """Active chains whose events the flow page listens to."""
    return list(Chain.objects.filter(agent__flow=flow, is_active=True).order_by("id")
                .values_list("pk", flat=True)[:MAX_LIVE_CHAINS])


def flow_cost(*, flow: Flow) -> FlowCost:
    return flow_costs(flow_ids=[flow.pk]).get(flow.pk, FlowCost())


def flow_extras(*, flow: Flow, note_kind: str, note_q: str) -> dict[str, Any]:
    notes, note_filter = flow_notes(flow=flow, kind=note_kind, q=note_q)
    return {"notes": notes, "note_filter": note_filter, "cost": flow_cost(flow=flow),
            "live_chain_ids": flow_live_chain_ids(flow=flow)}
