"""/api/flows: list, create, read, add agents, export a chain."""
from __future__ import annotations

import json
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse

from flows.api.errors import ApiError, not_found, read_json
from flows.api.selectors import flow_chain_for_export, flow_visible
from flows.api.serializers import agent_json, flow_json
from flows.core import parse_id
from flows.engine import FORMATS, export_chain
from flows.ingest import agent_create, flow_create
from flows.models import AGENT_TYPES, Chain, Flow, Profile

__all__ = ["flows_collection", "flow_detail", "flow_agents", "flow_export", "get_flow", "json_object"]

MAX_TITLE_CHARS = 200
MAX_LIST_FLOWS = 500


def json_object(request: HttpRequest) -> dict[str, Any]:
    body = read_json(request)
    if not isinstance(body, dict):
        raise ApiError(400, "invalid_body", "the body must be a JSON object")
    return body


def _string(body: dict[str, Any], key: str, *, default: str = "", max_chars: int = 200, required: bool = False) -> str:
    value = body.get(key, default)
    if value is None and not required:
        value = default
    if not isinstance(value, str) or (required and not value.strip()):
        raise ApiError(400, "invalid_field", f"'{key}' must be a non-empty string" if required
                       else f"'{key}' must be a string", field=key)
    if len(value) > max_chars:
        raise ApiError(400, "invalid_field", f"'{key}' is longer than {max_chars} characters", field=key)
    return value.strip()


def get_flow(request: HttpRequest, flow_id: str) -> Flow:
    try:
        return flow_visible(user=request.user, flow_id=int(flow_id))
    except Flow.DoesNotExist:
        raise not_found("flow") from None


def _list(request: HttpRequest) -> JsonResponse:
    flows = Flow.objects.visible_to(request.user).select_related("owner")[:MAX_LIST_FLOWS]
    return JsonResponse({"flows": [flow_json(f) for f in flows]})


def _create(request: HttpRequest) -> JsonResponse:
    body = json_object(request)
    flow = flow_create(owner=request.user, title=_string(body, "title", required=True, max_chars=MAX_TITLE_CHARS),
                       model_name=_string(body, "model_name"))
    return JsonResponse(flow_json(flow, agents=True), status=201)


def _detail(request: HttpRequest, flow_id: str) -> JsonResponse:
    return JsonResponse(flow_json(get_flow(request, flow_id), agents=True))


def _add_agent(request: HttpRequest, flow_id: str) -> JsonResponse:
    flow = get_flow(request, flow_id)
    body = json_object(request)
    agent_type = body.get("agent_type")
    profile = body.get("profile", Profile.AGENT)
    if agent_type not in AGENT_TYPES:
        raise ApiError(400, "invalid_field", f"'agent_type' must be one of {', '.join(AGENT_TYPES)}",
                       field="agent_type")
    if profile not in Profile.values:
        raise ApiError(400, "invalid_field", "'profile' must be 'agent' or 'assistant'", field="profile")
    agent = agent_create(flow=flow, agent_type=agent_type, profile=profile)
    return JsonResponse(agent_json(agent), status=201)


def _export_chain(request: HttpRequest, flow: Flow) -> Chain:
    wanted = request.GET.get("chain")
    chain_id = parse_id(wanted) if wanted else None
    chain = None if wanted and chain_id is None else flow_chain_for_export(flow=flow, chain_id=chain_id)
    if chain is None:
        raise not_found("chain")
    return chain


def _export(request: HttpRequest, flow_id: str) -> HttpResponse:
    flow = get_flow(request, flow_id)
    fmt = request.GET.get("format", "openai")
    if fmt not in FORMATS:
        raise ApiError(400, "invalid_format", f"'format' must be one of {', '.join(FORMATS)}")
    chain = _export_chain(request, flow)
    data = export_chain(chain.raw_messages(), fmt)
    if isinstance(data, str):
        resp = HttpResponse(data, content_type="application/x-ndjson; charset=utf-8")
        ext = "jsonl"
    else:
        resp = HttpResponse(json.dumps(data, ensure_ascii=False), content_type="application/json")
        ext = "json"
    resp["Content-Disposition"] = f'attachment; filename="flow-{flow.pk}-chain-{chain.pk}-{fmt}.{ext}"'
    return resp


flows_collection = {"GET": _list, "POST": _create}
flow_detail = {"GET": _detail}
flow_agents = {"POST": _add_agent}
flow_export = {"GET": _export}
