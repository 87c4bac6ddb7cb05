"""`/flows/{id}/`: the flow's agents and chains, its memory notes (filterable), the summarizer's cost and the
events timeline, which `static/js/flow.js` keeps live by re-reading `/flows/{id}/timeline/` on chain events."""
from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from flows.pages.lookup import flow_or_404
from flows.pages.selectors import flow_agents, flow_detail_context, flow_extras, flow_live_chain_ids, flow_timeline

__all__ = ["flow_page", "flow_timeline_fragment", "flow_agents_fragment"]

MAX_NOTE_QUERY_CHARS = 200


@login_required
@require_GET
def flow_page(request: HttpRequest, flow_id: int) -> HttpResponse:
    flow = flow_or_404(request, flow_id)
    kind = request.GET.get("kind", "")[:32]
    q = request.GET.get("note_q", "").strip()[:MAX_NOTE_QUERY_CHARS]
    context = {"flow": flow, "nav": "flows", **flow_detail_context(flow=flow),
               **flow_extras(flow=flow, note_kind=kind, note_q=q)}
    return render(request, "flows/flow_detail.html", context)


@login_required
@require_GET
def flow_timeline_fragment(request: HttpRequest, flow_id: int) -> HttpResponse:
    """The timeline section alone (server-rendered, escaped), for the live flow page."""
    flow = flow_or_404(request, flow_id)
    return render(request, "flows/partials/flow_timeline.html", {"flow": flow, "events": flow_timeline(flow=flow)})


@login_required
@require_GET
def flow_agents_fragment(request: HttpRequest, flow_id: int) -> HttpResponse:
    """The agents section alone (server-rendered, escaped), most recently active first, for the live flow page;
    it names the active chains to listen to, so agents that joined since the page loaded are followed too."""
    flow = flow_or_404(request, flow_id)
    return render(request, "flows/partials/flow_agents.html",
                  {"flow": flow, "agents": flow_agents(flow=flow), "live_chain_ids": flow_live_chain_ids(flow=flow)})
