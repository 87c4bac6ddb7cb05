"""`/flows/{id}/`: the flow's agents and chains, its memory notes (filterable), the summarizer's cost and the
events timeline, which `static/js/flow.js` keeps live by re-reading `/flows/{id}/timeline/` on chain events."""
from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from flows.models import Flow, SummaryEvent
from flows.pages.event_filters import KINDS, OUTCOMES, event_filter_parse
from flows.pages.lookup import flow_or_404
from flows.pages.selectors import (
    events_hidden,
    flow_agents,
    flow_detail_context,
    flow_extras,
    flow_live_chain_ids,
    flow_timeline,
)

__all__ = ["flow_page", "flow_timeline_fragment", "flow_agents_fragment"]

MAX_NOTE_QUERY_CHARS = 200


@login_required
@require_GET
def flow_page(request: HttpRequest, flow_id: int) -> HttpResponse:
    flow = flow_or_404(request, flow_id)
    kind = request.GET.get("kind", "")[:32]
    q = request.GET.get("note_q", "").strip()[:MAX_NOTE_QUERY_CHARS]
    context = {"flow": flow, "nav": "flows", **flow_detail_context(flow=flow),
               **flow_extras(flow=flow, note_kind=kind, note_q=q), **_timeline_context(request, flow),
               "event_kinds": KINDS, "event_outcomes": OUTCOMES}
    return render(request, "flows/flow_detail.html", context)


@login_required
@require_GET
def flow_timeline_fragment(request: HttpRequest, flow_id: int) -> HttpResponse:
    """The timeline section alone (server-rendered, escaped), for the live flow page."""
    flow = flow_or_404(request, flow_id)
    return render(request, "flows/partials/flow_timeline.html", {"flow": flow, **_timeline_context(request, flow)})


def _timeline_context(request: HttpRequest, flow: Flow) -> dict[str, Any]:
    """The timeline's rows under the events filter (skipped runs hidden by default) and how many it hides."""
    only = event_filter_parse(request)
    every = SummaryEvent.objects.filter(chain__agent__flow=flow)
    skipped_query = request.GET.copy()
    skipped_query["ev_skipped"] = "1"
    return {"events": flow_timeline(flow=flow, only=only), "event_filter": only,
            "events_hidden": events_hidden(events=every, only=only),
            "events_skipped_url": f"?{skipped_query.urlencode()}#timeline-h"}


@login_required
@require_GET
def flow_agents_fragment(request: HttpRequest, flow_id: int) -> HttpResponse:
    """The agents section alone (server-rendered, escaped), most recently active first, for the live flow page."""
    flow = flow_or_404(request, flow_id)
    return render(request, "flows/partials/flow_agents.html",
                  {"flow": flow, "agents": flow_agents(flow=flow), "live_chain_ids": flow_live_chain_ids(flow=flow)})
