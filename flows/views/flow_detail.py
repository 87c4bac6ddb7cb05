"""`/flows/{id}/`: the flow's agents and chains, its memory notes and the summarization events timeline."""
from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from ..selectors_pages import flow_detail_context, flow_for_page

__all__ = ["flow_page"]


@login_required
@require_GET
def flow_page(request: HttpRequest, flow_id: int) -> HttpResponse:
    flow = flow_for_page(flow_id=flow_id, user=request.user)
    context = {"flow": flow, "nav": "flows", **flow_detail_context(flow=flow)}
    return render(request, "flows/flow_detail.html", context)
