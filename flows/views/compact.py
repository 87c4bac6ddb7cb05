"""POST `/chains/{id}/compact/`: "compact now", optionally with focus instructions (queued, never inline)."""
from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from ..selectors_pages import chain_for_page
from ..services import chain_request_compaction

__all__ = ["MAX_INSTRUCTIONS_CHARS", "chain_compact_page"]

MAX_INSTRUCTIONS_CHARS = 2000


@login_required
@require_POST
def chain_compact_page(request: HttpRequest, chain_id: int) -> HttpResponse:
    chain = chain_for_page(chain_id=chain_id, user=request.user)
    instructions = request.POST.get("instructions", "").strip()
    if len(instructions) > MAX_INSTRUCTIONS_CHARS:
        messages.error(request, f"Focus instructions are limited to {MAX_INSTRUCTIONS_CHARS} characters; "
                                "nothing queued.")
        return redirect("chain-detail", chain_id=chain.pk)
    event = chain_request_compaction(chain=chain, instructions=instructions, user=request.user)
    focus = " with your focus instructions" if instructions else ""
    messages.success(request, f"Compaction #{event.pk} queued{focus}; a notice appears when it starts and completes.")
    return redirect("chain-detail", chain_id=chain.pk)
