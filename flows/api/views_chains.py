"""/api/chains/{id}: read the chain (raw, view, sections, stats), append, catch up, events, compact, preview."""
from __future__ import annotations

from typing import Any

from django.http import HttpRequest, JsonResponse

from flows.api.errors import ApiError, not_found
from flows.api.selectors import chain_events, chain_messages, chain_visible
from flows.api.serializers import chain_page_json, chain_view_json, event_json, message_json
from flows.api.views_flows import json_object
from flows.config import settings_for, settings_validate, settings_values
from flows.core import BrokerUnreachable, db_run, instructions_problem
from flows.ingest import chain_append
from flows.models import Chain, Outcome
from flows.pages import chain_context_json
from flows.pipeline import chain_dry_run, chain_preview, chain_request_compaction, dry_run_moved

__all__ = ["chain_detail", "chain_messages_endpoint", "chain_events_endpoint", "chain_compact_endpoint",
           "chain_preview_endpoint"]

DEFAULT_PAGE_MESSAGES = 500
MAX_PAGE_MESSAGES = 1000
MAX_SEQ = 2**31 - 1  # Message.seq is a 32-bit integer column
MAX_PREVIEW_ID = 2**53 - 1  # dry runs' ids are JSON-safe integers


def get_chain(request: HttpRequest, chain_id: str) -> Chain:
    try:
        return chain_visible(user=request.user, chain_id=int(chain_id))
    except Chain.DoesNotExist:
        raise not_found("chain") from None


def _int_param(request: HttpRequest, name: str, default: int, *, lo: int, hi: int) -> int:
    raw = request.GET.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ApiError(400, "invalid_parameter", f"'{name}' must be a whole number", field=name) from None
    if not lo <= value <= hi:
        raise ApiError(400, "invalid_parameter", f"'{name}' must be between {lo} and {hi}", field=name)
    return value


async def _detail(request: HttpRequest, chain_id: str) -> JsonResponse:
    """Bounded steps, each awaited: when the client goes away Django cancels this view between them."""
    after = _int_param(request, "after_seq", 0, lo=0, hi=MAX_SEQ)
    limit = _int_param(request, "limit", DEFAULT_PAGE_MESSAGES, lo=1, hi=MAX_PAGE_MESSAGES)
    view_offset = _int_param(request, "view_offset", 0, lo=0, hi=MAX_SEQ)
    chain = await db_run(get_chain, request, chain_id)
    out = await db_run(lambda: chain_page_json(chain, after_seq=after, limit=limit))
    first = "after_seq" not in request.GET
    if first or "view_offset" in request.GET:  # later raw pages carry raw messages and stats only
        view_part, view_stats = await db_run(lambda: chain_view_json(chain, out["stats"], offset=view_offset,
                                                                     limit=limit))
        out.update(view_part)
        out["stats"].update(view_stats)
    if first:
        out["context"] = await db_run(chain_context_json, chain)
    return JsonResponse(out)


def _append(request: HttpRequest, chain_id: str) -> JsonResponse:
    body = json_object(request)
    if "messages" not in body:
        raise ApiError(400, "invalid_body", "send {\"messages\": [...]}")
    try:  # who may see the chain is checked by the query that locks it: one query fewer per append
        result = chain_append(chain=int(chain_id), messages=body["messages"], visible_to=request.user)
    except Chain.DoesNotExist:
        raise not_found("chain") from None
    return JsonResponse({"appended": result.appended, "last_seq": result.last_seq,
                         "turn_completed": result.turn_completed,
                         "summarization": result.summarization}, status=201)


def _catch_up(request: HttpRequest, chain_id: str) -> JsonResponse:
    chain = get_chain(request, chain_id)
    after = _int_param(request, "after_seq", 0, lo=0, hi=MAX_SEQ)
    limit = _int_param(request, "limit", DEFAULT_PAGE_MESSAGES, lo=1, hi=MAX_PAGE_MESSAGES)
    rows = list(chain_messages(chain=chain, after_seq=after, limit=limit + 1))
    return JsonResponse({"chain_id": chain.pk, "last_seq": chain.last_seq, "has_more": len(rows) > limit,
                         "messages": [message_json(r) for r in rows[:limit]]})


def _events(request: HttpRequest, chain_id: str) -> JsonResponse:
    chain = get_chain(request, chain_id)
    return JsonResponse({"chain_id": chain.pk, "events": [event_json(e) for e in chain_events(chain=chain)]})


def _compact_fields(body: dict[str, Any]) -> tuple[str, bool, int | None]:
    """(instructions, dry_run, preview_id) of a compact request, each checked; bad ones are a 400."""
    instructions = body.get("instructions", "")
    problem = instructions_problem(instructions)  # `{}`, null or a number are refused, not read as "no focus"
    if problem is not None:
        raise ApiError(400, "invalid_field", f"'instructions' {problem}", field="instructions")
    dry_run = body.get("dry_run", False)
    if not isinstance(dry_run, bool):
        raise ApiError(400, "invalid_field", "'dry_run' must be true or false", field="dry_run")
    preview_id = body.get("preview_id")
    if preview_id is not None and (not isinstance(preview_id, int) or isinstance(preview_id, bool)
                                   or not 0 < preview_id <= MAX_PREVIEW_ID):
        raise ApiError(400, "invalid_field", "'preview_id' must be the id a dry run returned", field="preview_id")
    if dry_run and preview_id is not None:
        raise ApiError(400, "invalid_body", "send either 'dry_run' or 'preview_id', not both")
    return instructions.strip(), dry_run, preview_id


def _dry_run(request: HttpRequest, chain: Chain, instructions: str) -> JsonResponse:
    """Computed on the request and written nowhere; nothing to compact is a 409, a compaction that would fail
    (the summary model down, a failed identifier audit, no shrink) a 422 with its reason."""
    run = chain_dry_run(chain=chain, instructions=instructions, user=request.user).as_json()
    if run["outcome"] == Outcome.SKIPPED:
        raise ApiError(409, "nothing_to_compact", run["reason"])
    if run["outcome"] != Outcome.OK:
        raise ApiError(422, "compaction_would_fail", run["reason"])
    return JsonResponse(run)


def _compact(request: HttpRequest, chain_id: str) -> JsonResponse:
    chain = get_chain(request, chain_id)
    body = json_object(request) if request.body else {}
    instructions, dry_run, preview_id = _compact_fields(body)
    if dry_run:
        return _dry_run(request, chain, instructions)
    moved = dry_run_moved(chain=chain, preview_id=preview_id, instructions=instructions) if preview_id else ""
    # The request only records the RUNNING event and queues the work: summarization never runs on the request.
    try:
        event = chain_request_compaction(chain=chain, instructions=instructions, user=request.user,
                                         preview_id=preview_id)
    except BrokerUnreachable:
        raise ApiError(503, "broker_unreachable", "the task broker did not answer: the compaction was not "
                       "queued (its event is closed as failed); try again once it is back") from None
    out = event_json(event)
    if preview_id:
        out["preview"] = {"reused": not moved, "recomputed_because": moved or None}
    return JsonResponse(out, status=201)


def _preview(request: HttpRequest, chain_id: str) -> JsonResponse:
    chain = get_chain(request, chain_id)
    body = json_object(request)
    overrides = body.get("settings", {})
    base = settings_for(profile=chain.agent.profile, flow=chain.agent.flow_id)
    cleaned = settings_validate(overrides, base=base)
    result = chain_preview(chain=chain, settings={**settings_values(base), **cleaned})
    return JsonResponse(result)


chain_detail = {"GET": _detail}
chain_messages_endpoint = {"GET": _catch_up, "POST": _append}
chain_events_endpoint = {"GET": _events}
chain_compact_endpoint = {"POST": _compact}
chain_preview_endpoint = {"POST": _preview}
