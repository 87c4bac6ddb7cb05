"""POST `/chains/{id}/compact/`: "compact now", optionally with focus instructions (queued, never inline).

Without JavaScript the form posts and the page comes back with a flash message. `static/js/chain_page.js` posts
the same form with `Accept: application/json` and gets `{"event_id", "message"}` (202) or `{"error"}` (400),
so the page stays where it is and shows the notices of that event only.
"""
from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from ..selectors_pages import chain_for_page

__all__ = ["MAX_INSTRUCTIONS_CHARS", "chain_compact_page"]

MAX_INSTRUCTIONS_CHARS = 2000


@login_required
@require_POST
def chain_compact_page(request: HttpRequest, chain_id: int) -> HttpResponse:
    chain = chain_for_page(chain_id=chain_id, user=request.user)
    instructions = request.POST.get("instructions", "").strip()
    wants_json = "application/json" in request.headers.get("Accept", "")
    if len(instructions) > MAX_INSTRUCTIONS_CHARS:
        error = f"Focus instructions are limited to {MAX_INSTRUCTIONS_CHARS} characters; nothing queued."
        if wants_json:
            return JsonResponse({"error": error}, status=400)
        messages.error(request, error)
        return redirect("chain-detail", chain_id=chain.pk)
    from ..services.views import chain_request_compaction

    event = chain_request_compaction(chain=chain, instructions=instructions, user=request.user)
    focus = " with your focus instructions" if instructions else ""
    text = f"Compaction #{event.pk} queued{focus}; a notice appears when it starts and completes."
    if wants_json:
        return JsonResponse({"event_id": event.pk, "message": text}, status=202)
    messages.success(request, text)
    return redirect("chain-detail", chain_id=chain.pk)
