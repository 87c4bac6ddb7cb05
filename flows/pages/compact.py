"""POST `/chains/{id}/compact/`: "compact now", optionally with focus instructions (queued, never inline), and
POST `/chains/{id}/compact/preview/`: its dry run, a page showing what it would produce before anything is written.

Without JavaScript the form posts and the page comes back with a flash message. `static/js/chain_page.js` posts
the same form with `Accept: application/json` and gets `{"event_id", "message"}` (202) or `{"error"}` (400),
so the page stays where it is and shows the notices of that event only. The dry run is a plain form post to its
own page (its Apply button posts `preview_id` back to "compact now"; Cancel returns to the chain).
"""
from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import BadRequest
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from flows.core import MAX_INSTRUCTIONS_CHARS, BrokerUnreachable, plain_text_problem
from flows.models import Chain, Outcome
from flows.pages.lookup import chain_or_404
from flows.pipeline import DRY_RUN_SECONDS, chain_dry_run, chain_request_compaction, dry_run_moved

__all__ = ["chain_compact_page", "chain_dry_run_page"]

MAX_PREVIEW_ID = 2**53 - 1


def _instructions(request: HttpRequest) -> tuple[str, str | None]:
    """The form's focus instructions and why they cannot be used (None: usable; empty means no focus)."""
    instructions = request.POST.get("instructions", "").strip()
    problem = plain_text_problem(instructions)
    if problem is not None:  # no textarea sends NUL; refused alike on SQLite and PostgreSQL
        raise BadRequest(f"Focus instructions {problem}.")
    if len(instructions) > MAX_INSTRUCTIONS_CHARS:
        return instructions, f"Focus instructions are limited to {MAX_INSTRUCTIONS_CHARS} characters; nothing queued."
    return instructions, None


def _preview_id(request: HttpRequest) -> int | None:
    raw = request.POST.get("preview_id", "")
    if not raw:
        return None
    if not raw.isdigit() or not 0 < int(raw) <= MAX_PREVIEW_ID:
        raise BadRequest("preview_id must be the number a dry run gave.")
    return int(raw)


def _refused(request: HttpRequest, chain: Chain, error: str, status: int, wants_json: bool) -> HttpResponse:
    if wants_json:
        return JsonResponse({"error": error}, status=status)
    messages.error(request, error)
    return redirect("chain-detail", chain_id=chain.pk)


@login_required
@require_POST
def chain_compact_page(request: HttpRequest, chain_id: int) -> HttpResponse:
    chain = chain_or_404(request, chain_id)
    instructions, problem = _instructions(request)
    preview_id = _preview_id(request)
    wants_json = "application/json" in request.headers.get("Accept", "")
    if problem is not None:
        return _refused(request, chain, problem, 400, wants_json)
    moved = dry_run_moved(chain=chain, preview_id=preview_id, instructions=instructions) if preview_id else ""
    try:
        event = chain_request_compaction(chain=chain, instructions=instructions, user=request.user,
                                         preview_id=preview_id)
    except BrokerUnreachable:
        error = "The task broker did not answer: the compaction was not queued. Try again once it is back."
        return _refused(request, chain, error, 503, wants_json)
    focus = " with your focus instructions" if instructions else ""
    text = f"Compaction #{event.pk} queued{focus}; a notice appears when it starts and completes."
    if preview_id:
        text = (f"Compaction #{event.pk} queued: it applies the summary you previewed (no model asked again)."
                if not moved else f"Compaction #{event.pk} queued, recomputed: {moved}.")
    if wants_json:
        return JsonResponse({"event_id": event.pk, "message": text}, status=202)
    messages.success(request, text)
    return redirect("chain-detail", chain_id=chain.pk)


@login_required
@require_POST
def chain_dry_run_page(request: HttpRequest, chain_id: int) -> HttpResponse:
    """What "compact now" would produce with these focus instructions; written nowhere until applied."""
    chain = chain_or_404(request, chain_id)
    instructions, problem = _instructions(request)
    if problem is not None:
        return _refused(request, chain, problem.replace("nothing queued", "nothing previewed"), 400, False)
    run = chain_dry_run(chain=chain, instructions=instructions, user=request.user)
    if run.outcome == Outcome.SKIPPED:
        return _refused(request, chain, f"Nothing to preview: {run.reason}.", 409, False)
    if run.outcome != Outcome.OK:
        return _refused(request, chain, f"This compaction would fail, so there is nothing to apply: {run.reason}.",
                        422, False)
    return render(request, "flows/compact_preview.html", {
        "chain": chain, "flow": chain.agent.flow, "agent": chain.agent, "nav": "flows", "here": "compaction dry run",
        "run": run.as_json(), "minutes": DRY_RUN_SECONDS // 60})
