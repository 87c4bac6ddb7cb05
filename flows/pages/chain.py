"""`/chains/{id}/`: raw chain and model view side by side, window bar, charts, events; plus its live partial.

Filters and paging are GET parameters so the page works without JS: `role`, `tool`, `q` (text search),
`page` (seq windows of PAGE_SIZE_MESSAGES; default: the newest page) and `sel` (a view message whose lineage
is highlighted server-side; JS does the same client-side without a round trip).
"""
from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import BadRequest
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from flows.core import MAX_INSTRUCTIONS_CHARS, plain_text_problem
from flows.engine import FORMATS, is_estimate
from flows.models import ROLES, Chain, SummaryEvent
from flows.pages.chain_layout import layout_bands, raw_row
from flows.pages.charts import bytes_chart, retention_chart, tokens_chart
from flows.pages.context_breakdown import BAR_UNITS, chain_window, context_breakdown
from flows.pages.event_filters import KINDS, OUTCOMES, event_filter_parse
from flows.pages.lookup import chain_or_404
from flows.pages.selectors import (
    EVENTS_SHOWN,
    PAGE_SIZE_MESSAGES,
    RawFilters,
    chain_cost,
    chain_events_page,
    chain_message,
    chain_tool_names,
    display_text,
    events_hidden,
    raw_page,
    raw_page_count,
    raw_prefix_bytes,
    view_history,
)
from flows.pipeline import window_estimate

__all__ = ["chain_page", "chain_view_panel", "chain_message_text", "chain_context", "parse_filters"]

FILTER_TEXT_MAX_CHARS = 200
PAGE_LINKS_AROUND = 3


def _filter_text(request: HttpRequest, name: str) -> str:
    value = request.GET.get(name, "").strip()[:FILTER_TEXT_MAX_CHARS]
    problem = plain_text_problem(value)
    if problem is not None:  # PostgreSQL refuses NUL in a query: a 500 there, a silent match on SQLite
        raise BadRequest(f"The '{name}' filter {problem}.")
    return value


def parse_filters(request: HttpRequest) -> RawFilters:
    role = request.GET.get("role", "")
    return RawFilters(role=role if role in ROLES else "", tool=_filter_text(request, "tool"),
                      q=_filter_text(request, "q"))


def _int_param(request: HttpRequest, name: str) -> int | None:
    try:
        return int(request.GET.get(name, ""))
    except ValueError:
        return None


def _page_links(page: int, pages: int) -> list[int | None]:
    """Page numbers to link: first, last, and a few around the current one (None = a gap)."""
    wanted = {1, pages} | set(range(page - PAGE_LINKS_AROUND, page + PAGE_LINKS_AROUND + 1))
    out: list[int | None] = []
    for n in sorted(x for x in wanted if 1 <= x <= pages):
        if out and out[-1] is not None and n > out[-1] + 1:
            out.append(None)
        out.append(n)
    return out


def chain_context(request: HttpRequest, chain: Chain) -> dict[str, Any]:
    """Everything the chain page and its live partial render (one seq window of raw messages)."""
    flow = chain.agent.flow
    filters = parse_filters(request)
    tool_names = chain_tool_names(chain=chain)
    pages = raw_page_count(chain=chain, filters=filters, tool_names=tool_names)
    page = min(max(_int_param(request, "page") or pages, 1), pages)
    raw_rows = [raw_row(m, tool_names) for m in raw_page(chain=chain, filters=filters, tool_names=tool_names,
                                                         page=page)]
    if filters.active:
        lo, hi = (raw_rows[0].seq, raw_rows[-1].seq) if raw_rows else (0, -1)
    else:
        lo, hi = (page - 1) * PAGE_SIZE_MESSAGES + 1, page * PAGE_SIZE_MESSAGES
    view = chain.latest_view()
    window, reserve = chain_window(chain)
    totals = chain.totals()
    history = view_history(chain=chain)
    prefix = raw_prefix_bytes(chain=chain)
    bands = layout_bands(view=view, raw=raw_rows, page_lo=lo, page_hi=hi, filtered=filters.active,
                         tool_names=tool_names, model=flow.model_name)
    sel = _int_param(request, "sel")
    selected = next((v for b in bands for v in b.view if v.index == sel), None)
    return {
        "chain": chain, "flow": flow, "agent": chain.agent, "view": view, "totals": totals, "bands": bands,
        "filters": filters, "roles": ROLES, "tools": sorted({n for n in tool_names.values() if n}),
        "page": page, "pages": pages, "page_links": _page_links(page, pages), "is_last_page": page == pages,
        "window": window, "context": context_breakdown(chain=chain, view=view, window=window, reserve=reserve),
        "bar_units": BAR_UNITS,
        "tokens_estimated": is_estimate(flow.model_name or None),
        "bytes_chart": bytes_chart(history=history, prefix=prefix),
        "tokens_chart": tokens_chart(history=history, last_seq=chain.last_seq, window=window.window, reserve=reserve),
        "retention_chart": retention_chart(history=history, last_seq=chain.last_seq),
        **_events_context(request, chain), "selected": selected, **_cost_context(chain),
        "view_versions": len(history["views"]), "formats": FORMATS,
        "has_pending": any(b.kind == "pending" for b in bands),
        "selected_seqs": set(selected.raw_seqs) if selected else set(),
        "view_saved": totals["bytes"] - (view.byte_size if view else totals["bytes"]),
        "page_size": PAGE_SIZE_MESSAGES, "nav": "flows", "query": _query_without(request, "page"),
        "panel_url": reverse("chain-view-panel", args=[chain.pk]), "max_instructions_chars": MAX_INSTRUCTIONS_CHARS,
    }


def _cost_context(chain: Chain) -> dict[str, Any]:
    """The cost card: what summarizing the chain cost, and what the window-aware strategy would have spent."""
    cost = chain_cost(chain=chain)
    return {"cost": cost, "window_cost": window_estimate(chain=chain, usd_per_input_token=cost.usd_per_input_token)}


def _events_context(request: HttpRequest, chain: Chain) -> dict[str, Any]:
    """The events table: the filter from the query (skipped runs hidden by default), the rows it lets through,
    how many it hides, and the chain's event count whatever the filter (the stat card's figure)."""
    only = event_filter_parse(request)
    events, shown_total = chain_events_page(chain=chain, only=only,
                                            limit=None if request.GET.get("events") == "all" else EVENTS_SHOWN)
    every = SummaryEvent.objects.filter(chain=chain)
    return {"events": events, "events_total": shown_total, "events_count": every.count(), "event_filter": only,
            "events_hidden": events_hidden(events=every, only=only), "event_kinds": KINDS,
            "event_outcomes": OUTCOMES, "events_all_url": "?" + _query_with(request, events="all") + "#events-h",
            "events_skipped_url": "?" + _query_with(request, ev_skipped="1") + "#events-h"}


def _query_with(request: HttpRequest, **values: str) -> str:
    q = request.GET.copy()
    for name, value in values.items():
        q[name] = value
    return q.urlencode()


def _query_without(request: HttpRequest, *names: str) -> str:
    q = request.GET.copy()
    for n in names:
        q.pop(n, None)
    return q.urlencode()


@login_required
@require_GET
def chain_page(request: HttpRequest, chain_id: int) -> HttpResponse:
    chain = chain_or_404(request, chain_id)
    return render(request, "flows/chain.html", chain_context(request, chain))


@login_required
@require_GET
def chain_view_panel(request: HttpRequest, chain_id: int) -> HttpResponse:
    """The live part of the chain page alone; live.js swaps it in when a view lands (Django-escaped HTML)."""
    chain = chain_or_404(request, chain_id)
    return render(request, "flows/partials/chain_live.html", chain_context(request, chain))


@login_required
@require_GET
def chain_message_text(request: HttpRequest, chain_id: int, seq: int) -> HttpResponse:
    """The full text of one raw message as text/plain (bodies above FULL_TEXT_CHARS are not inlined)."""
    chain = chain_or_404(request, chain_id)
    message = chain_message(chain=chain, seq=seq)
    if message is None:
        raise Http404("no such message")
    response = HttpResponse(display_text(message.to_dict()), content_type="text/plain; charset=utf-8")
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "default-src 'none'"
    return response

