"""/api/import: a transcript file (OpenAI JSON, PentAGI msgchain JSON, OpenClaw JSONL) becomes a new flow."""
from __future__ import annotations

from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, JsonResponse

from flows.api.errors import ApiError, read_json
from flows.engine import FORMATS
from flows.ingest import chain_import
from flows.models import AGENT_TYPES, Profile

__all__ = ["import_endpoint"]

MULTIPART = "multipart/form-data"


def _from_multipart(request: HttpRequest) -> dict:
    try:
        upload = request.FILES.get("file")
        fields = request.POST
    except RequestDataTooBig:
        raise ApiError(413, "payload_too_large", "the upload is too large") from None
    if upload is None:
        raise ApiError(400, "invalid_body", "send the transcript as the 'file' field")
    return {"data": upload.read(), "format": fields.get("format") or None, "title": fields.get("title", "")
            or upload.name, "agent_type": fields.get("agent_type"), "profile": fields.get("profile")}


def _options(body: dict) -> dict:
    fmt = body.get("format")
    if fmt is not None and fmt not in FORMATS:
        raise ApiError(400, "invalid_field", f"'format' must be one of {', '.join(FORMATS)}", field="format")
    title = body.get("title") or ""
    agent_type = body.get("agent_type") or "primary_agent"
    profile = body.get("profile") or Profile.AGENT
    if not isinstance(title, str) or agent_type not in AGENT_TYPES or profile not in Profile.values:
        raise ApiError(400, "invalid_field", "'title' must be a string, 'agent_type' a PentAGI agent type and "
                       "'profile' agent or assistant")
    return {"fmt": fmt, "title": title[:200], "agent_type": agent_type, "profile": profile}


def _import(request: HttpRequest) -> JsonResponse:
    if (request.content_type or "") == MULTIPART:
        body = _from_multipart(request)
    else:
        body = read_json(request)
        if not isinstance(body, dict) or "data" not in body:
            raise ApiError(400, "invalid_body", "send {\"format\"?: ..., \"data\": ...} or a multipart 'file'")
    chain = chain_import(owner=request.user, data=body["data"], **_options(body))
    return JsonResponse({"flow_id": chain.agent.flow_id, "agent_id": chain.agent_id, "chain_id": chain.pk,
                         "messages": chain.last_seq}, status=201)


import_endpoint = {"POST": _import}
