"""The 500 answer (`handler500`): in the failing route's own format, naming the request id that is in the log.

Django logs the exception with its traceback on `django.request` (see LOGGING in settings); the client gets no
detail of it, only the id to quote.
"""
from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults

from pentagi_web.request_ids import current_request_id

__all__ = ["server_error"]


def server_error(request: HttpRequest) -> HttpResponse:
    request_id = current_request_id()
    message = f"unexpected server error (request id {request_id})"
    if request.path.startswith("/v1/messages"):
        body: dict = {"type": "error", "error": {"type": "api_error", "message": message}}
    elif request.path.startswith("/v1/"):
        body = {"error": {"message": message, "type": "server_error", "code": "internal_error", "param": None}}
    elif request.path.startswith("/api/"):
        body = {"error": "internal_error", "detail": message, "request_id": request_id}
    else:
        return defaults.server_error(request)
    return JsonResponse(body, status=500)
