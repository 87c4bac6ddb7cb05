"""`/`: every visible flow (newest activity first) with what it is doing, its size, window use, compactions and
the summarizer's cost; `?q=` searches across the flows (flows/pages/flow_search.py)."""
from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from flows.pages.flow_search import HITS_SHOWN, MAX_QUERY_CHARS, flows_search
from flows.pages.selectors import FlowCost, flow_costs, flows_list_rows

__all__ = ["flows_list_page"]


@login_required
@require_GET
def flows_list_page(request: HttpRequest) -> HttpResponse:
    rows = flows_list_rows(user=request.user)
    costs = flow_costs(flow_ids=[r.flow.pk for r in rows])
    rows_with_cost = [(r, costs.get(r.flow.pk, FlowCost())) for r in rows]
    q = request.GET.get("q", "").strip()[:MAX_QUERY_CHARS]
    return render(request, "flows/flows_list.html", {
        "rows": rows_with_cost, "nav": "flows", "q": q, "hits": flows_search(user=request.user, q=q) if q else None,
        "hits_shown": HITS_SHOWN, "max_query_chars": MAX_QUERY_CHARS})
