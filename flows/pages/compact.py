"""POST `/chains/{id}/compact/`: "compact now", optionally with focus instructions (queued, never inline).

Without JavaScript the form posts and the page comes back with a flash message. `static/js/chain_page.js` posts
the same form with `Accept: application/json` and gets `{"event_id", "message"}` (202) or `{"error"}` (400),
so the page stays where it is and shows the notices of that event only.
"""
from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import BadRequest
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from flows.core import MAX_INSTRUCTIONS_CHARS, BrokerUnreachable, plain_text_problem
from flows.pages.lookup import chain_or_404
from flows.pipeline import chain_request_compaction

__all__ = ["chain_compact_page"]


@login_required
@require_POST
def chain_compact_page(request: HttpRequest, chain_id: int) -> HttpResponse:
    chain = chain_or_404(request, chain_id)
    instructions = request.POST.get("instructions", "").strip()
    problem = plain_text_problem(instructions)
    if problem is not None:  # no textarea sends NUL; refused alike on SQLite and PostgreSQL
        raise BadRequest(f"Focus instructions {problem}.")
    wants_json = "application/json" in request.headers.get("Accept", "")
    if len(instructions) > MAX_INSTRUCTIONS_CHARS:
        error = f"Focus instructions are limited to {MAX_INSTRUCTIONS_CHARS} characters; nothing queued."
        if wants_json:
            return JsonResponse({"error": error}, status=400)
        messages.error(request, error)
        return redirect("chain-detail", chain_id=chain.pk)
    try:
        event = chain_request_compaction(chain=chain, instructions=instructions, user=request.user)
    except BrokerUnreachable:
        error = "The task broker did not answer: the compaction was not queued. Try again once it is back."
        if wants_json:
            return JsonResponse({"error": error}, status=503)
        messages.error(request, error)
        return redirect("chain-detail", chain_id=chain.pk)
    focus = " with your focus instructions" if instructions else ""
    text = f"Compaction #{event.pk} queued{focus}; a notice appears when it starts and completes."
    if wants_json:
        return JsonResponse({"event_id": event.pk, "message": text}, status=202)
    messages.success(request, text)
    return redirect("chain-detail", chain_id=chain.pk)
