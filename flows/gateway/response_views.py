"""The Responses API's stored-response endpoints: `GET`/`DELETE /v1/responses/{id}`, `GET .../input_items`.

They answer from our own records (`response_store`), never the upstream's: our ids are the only ones an agent
holds, and another user's id is a 404 like one never issued. The token is checked before anything is read.
"""
from __future__ import annotations

import json
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt

from flows.gateway import hops
from flows.gateway.admission import authenticate_bearer
from flows.gateway.response_store import response_delete, response_input_items, response_read
from flows.gateway.wire import GatewayError

__all__ = ["response_item", "response_items", "MAX_PAGE"]

JSON = "application/json"
MAX_PAGE = 100  # OpenAI's limit for input_items pages


def _reply(payload: dict[str, Any] | None, exc: GatewayError | None = None, allow: str = "") -> HttpResponse:
    if exc is not None:
        response = HttpResponse(exc.payload(), status=exc.status, content_type=JSON)
        if allow:
            response["Allow"] = allow
        return response
    return HttpResponse(json.dumps(payload, ensure_ascii=False), content_type=JSON)


def _item(headers: dict[str, str], method: str, response_id: str) -> dict[str, Any]:
    user = authenticate_bearer(headers)
    return response_read(user, response_id) if method == "GET" else response_delete(user, response_id)


@csrf_exempt
async def response_item(request: HttpRequest, response_id: str) -> HttpResponse:
    if request.method not in ("GET", "DELETE"):
        return _reply(None, GatewayError(405, "use GET or DELETE", code="method_not_allowed"), "GET, DELETE")
    try:
        return _reply(await hops.run(_item, dict(request.headers), str(request.method), response_id))
    except GatewayError as exc:
        return _reply(None, exc)


def _page_args(query: Any) -> dict[str, Any]:
    """limit (1-100, default 20), after (an item id), order (asc|desc, default desc): 400 when malformed."""
    raw_limit = query.get("limit", "20")
    if not (raw_limit.isascii() and raw_limit.isdigit() and 1 <= int(raw_limit) <= MAX_PAGE):
        raise GatewayError(400, f"'limit' must be an integer from 1 to {MAX_PAGE}", code="invalid_limit")
    order = query.get("order", "desc")
    if order not in ("asc", "desc"):
        raise GatewayError(400, "'order' must be 'asc' or 'desc'", code="invalid_order")
    return {"limit": int(raw_limit), "after": query.get("after") or None, "order": order}


def _items(headers: dict[str, str], query: Any, response_id: str) -> dict[str, Any]:
    user = authenticate_bearer(headers)
    return response_input_items(user, response_id, **_page_args(query))


@csrf_exempt
async def response_items(request: HttpRequest, response_id: str) -> HttpResponse:
    if request.method != "GET":
        return _reply(None, GatewayError(405, "use GET", code="method_not_allowed"), "GET")
    try:
        return _reply(await hops.run(_items, dict(request.headers), request.GET, response_id))
    except GatewayError as exc:
        return _reply(None, exc)
