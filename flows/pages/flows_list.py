"""`/`: every visible flow with its size, window use, compactions and the summarizer's cost."""
from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from flows.pages.selectors import FlowCost, flow_costs, flows_list_rows

__all__ = ["flows_list_page"]


@login_required
@require_GET
def flows_list_page(request: HttpRequest) -> HttpResponse:
    rows = flows_list_rows(user=request.user)
    costs = flow_costs(flow_ids=[r.flow.pk for r in rows])
    rows_with_cost = [(r, costs.get(r.flow.pk, FlowCost())) for r in rows]
    return render(request, "flows/flows_list.html", {"rows": rows_with_cost, "nav": "flows"})
