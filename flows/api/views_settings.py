"""/api/settings/{profile}[?flow=id]: read and change summarizer settings (defaults: staff only)."""
from __future__ import annotations

from django.http import HttpRequest, JsonResponse

from flows.api.errors import ApiError, not_found
from flows.api.selectors import flow_visible
from flows.api.serializers import settings_json
from flows.api.views_flows import json_object
from flows.config import settings_for, settings_save
from flows.core import parse_id
from flows.models import Flow, Profile

__all__ = ["settings_endpoint"]


def _profile(profile: str) -> str:
    if profile not in Profile.values:
        raise not_found("settings profile")
    return profile


def _flow(request: HttpRequest) -> Flow | None:
    raw = request.GET.get("flow")
    if not raw:
        return None
    flow_id = parse_id(raw)
    if flow_id is None:
        raise ApiError(400, "invalid_parameter", "'flow' must be a flow id", field="flow")
    try:
        return flow_visible(user=request.user, flow_id=flow_id)
    except Flow.DoesNotExist:
        raise not_found("flow") from None


def _get(request: HttpRequest, profile: str) -> JsonResponse:
    flow = _flow(request)
    row = settings_for(profile=_profile(profile), flow=flow)
    return JsonResponse({**settings_json(row), "scope": "flow" if row.flow_id else "defaults"})


def _put(request: HttpRequest, profile: str) -> JsonResponse:
    profile = _profile(profile)
    flow = _flow(request)
    body = json_object(request)
    data = body["settings"] if isinstance(body.get("settings"), dict) else body
    if flow is None and not request.user.is_staff:
        raise ApiError(403, "forbidden", "only staff change the defaults; pass ?flow=<id> for your flow")
    row, change = settings_save(profile=profile, flow=flow, data=data, user=request.user, source="api")
    return JsonResponse({**settings_json(row), "scope": "flow" if row.flow_id else "defaults",
                         "changed": change.changes if change else {}})


settings_endpoint = {"GET": _get, "PUT": _put}
