"""Which summarization events a page lists: by kind (trigger) and outcome, skipped runs hidden by default.

About half of a busy chain's events are "skipped" (the view already fitted); listing them by default buried the
runs that changed something. The filter is plain GET parameters (`ev_kind`, `ev_outcome`, `ev_skipped=1`), so
it works without JavaScript, survives the live panel's refresh (the page forwards its query) and can be linked.
"""
from __future__ import annotations

from dataclasses import dataclass

from django.db.models import QuerySet
from django.http import HttpRequest

from flows.models import Outcome, SummaryEvent, Trigger

__all__ = ["ALL_BUT_SKIPPED", "EventFilter", "event_filter_parse", "KINDS", "OUTCOMES"]

KINDS = tuple(Trigger.values)
OUTCOMES = tuple(Outcome.values)


@dataclass(frozen=True)
class EventFilter:
    kind: str = ""
    outcome: str = ""
    show_skipped: bool = False

    @property
    def hides_skipped(self) -> bool:
        """Skipped runs are left out unless asked for, or unless the outcome filter asks for them."""
        return not self.show_skipped and self.outcome != Outcome.SKIPPED

    @property
    def narrowed(self) -> bool:
        """True when the list is narrower than the default one (a kind or an outcome is picked)."""
        return bool(self.kind or self.outcome)

    def apply(self, events: QuerySet[SummaryEvent]) -> QuerySet[SummaryEvent]:
        if self.kind:
            events = events.filter(trigger=self.kind)
        if self.outcome:
            events = events.filter(outcome=self.outcome)
        elif self.hides_skipped:
            events = events.exclude(outcome=Outcome.SKIPPED)
        return events


ALL_BUT_SKIPPED = EventFilter()  # the default list


def event_filter_parse(request: HttpRequest) -> EventFilter:
    """The filter from the query; an unknown kind or outcome is ignored (the whole list, never an error)."""
    kind = request.GET.get("ev_kind", "")
    outcome = request.GET.get("ev_outcome", "")
    return EventFilter(kind=kind if kind in KINDS else "", outcome=outcome if outcome in OUTCOMES else "",
                       show_skipped=request.GET.get("ev_skipped") == "1")
