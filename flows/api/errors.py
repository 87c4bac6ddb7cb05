"""JSON errors for the API: every failure is `{"error": code, "detail": ...}` with a 4xx status.

`api_endpoint` wraps each view: it authenticates, checks the method, turns known exceptions (bad JSON, format
and validation errors, oversized bodies, missing objects) into 4xx JSON, and turns anything unexpected into a
JSON 500 rather than Django's HTML page.
"""
from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from django.core.exceptions import ObjectDoesNotExist, RequestDataTooBig, TooManyFieldsSent
from django.db import DataError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.http.multipartparser import MultiPartParserError
from django.views.decorators.csrf import csrf_exempt

from flows.api.auth import authenticate, csrf_failure
from flows.config import SettingsError
from flows.core import JsonBodyError, db_run, json_body
from flows.engine import FormatError
from flows.ingest import AppendError

__all__ = ["ApiError", "error_response", "api_endpoint", "api_endpoint_async", "read_json", "not_found"]

log = logging.getLogger(__name__)


class ApiError(Exception):
    def __init__(self, status: int, code: str, detail: Any, **extra: Any) -> None:
        super().__init__(f"{status} {code}: {detail}")
        self.status, self.code, self.detail, self.extra = status, code, detail, extra


def error_response(status: int, code: str, detail: Any, **extra: Any) -> JsonResponse:
    return JsonResponse({"error": code, "detail": detail, **extra}, status=status)


def not_found(what: str = "object") -> ApiError:
    return ApiError(404, "not_found", f"no such {what}")


def read_json(request: HttpRequest) -> Any:
    """The JSON body; 415 for another content type, 400 for malformed JSON or lone surrogates, 413 when too big."""
    ctype = request.content_type or ""
    if ctype != "application/json":
        raise ApiError(415, "unsupported_media_type", f"send application/json, got {ctype or 'nothing'}")
    try:
        raw = request.body
    except RequestDataTooBig:
        raise ApiError(413, "payload_too_large", "the request body is too large") from None
    try:
        return json_body(raw or b"")
    except JsonBodyError as exc:  # syntax, huge integers, deep nesting, lone surrogates: the API's own 400
        extra = {"field": exc.field} if exc.field else {}
        raise ApiError(400, exc.code if exc.code != "too_deep" else "malformed_json", str(exc), **extra) from None


def _known_error(exc: Exception) -> JsonResponse | None:
    if isinstance(exc, ApiError):
        return error_response(exc.status, exc.code, exc.detail, **exc.extra)
    if isinstance(exc, AppendError):
        extra = {"index": exc.index, "field": exc.field} if exc.index is not None else {}
        return error_response(exc.status, exc.code, str(exc), **extra, **exc.extra)
    if isinstance(exc, FormatError):
        where = {k: v for k, v in (("line", exc.line), ("index", exc.index)) if v is not None}
        return error_response(400, "invalid_format", str(exc), **where)
    if isinstance(exc, SettingsError):
        return error_response(400, "invalid_settings", exc.errors)
    if isinstance(exc, (RequestDataTooBig, TooManyFieldsSent)):
        return error_response(413, "payload_too_large", "the request body is too large")
    if isinstance(exc, DataError):  # a value the database cannot hold (checked earlier where we know of one)
        return error_response(400, "unstorable_value", "a value does not fit the database")
    if isinstance(exc, MultiPartParserError):
        return error_response(400, "malformed_multipart", f"the multipart body is broken: {exc}")
    if isinstance(exc, (Http404, ObjectDoesNotExist)):
        return error_response(404, "not_found", "no such object")
    if isinstance(exc, RecursionError):  # a JSON value nested near the recursion limit, whichever code walked it
        return error_response(400, "invalid_body", "a value in the body is nested too deeply")
    return None


def _not_allowed(request: HttpRequest, methods: Mapping[str, Any]) -> JsonResponse:
    resp = error_response(405, "method_not_allowed", f"{request.method} is not allowed here")
    resp["Allow"] = ", ".join(methods)
    return resp


def _refusal(request: HttpRequest) -> JsonResponse | None:
    """Authenticate (and CSRF-check session writes); a JSON 401/403 when refused, else None with request.user set."""
    user, by_session = authenticate(request)
    if user is None:
        return error_response(401, "unauthorized", "send 'Authorization: Bearer <token>' or log in")
    if by_session and request.method not in ("GET", "HEAD", "OPTIONS"):
        failure = csrf_failure(request)
        if failure is not None:
            return error_response(403, "csrf_failed", failure)
    request.user = user
    return None


def _translated(request: HttpRequest, exc: Exception) -> JsonResponse:
    known = _known_error(exc)
    if known is not None:
        return known
    log.exception("API %s %s failed", request.method, request.path)
    return error_response(500, "internal_error", "unexpected server error")


def _answer(request: HttpRequest, handler: Callable[..., HttpResponse], kwargs: dict[str, Any]) -> HttpResponse:
    try:
        return _refusal(request) or handler(request, **kwargs)
    except Exception as exc:  # noqa: BLE001 - the API answers JSON whatever happens
        return _translated(request, exc)


def api_endpoint(methods: dict[str, Callable[..., HttpResponse]]) -> Callable[..., Awaitable[HttpResponse]]:
    """One URL, one (sync) handler per HTTP method; auth, CSRF and error translation in one place. The view is
    async and runs the handler in one thread hop (`db_run`): in Django's thread for the request under the page
    stack, in a connection-keeping thread under the API handler (flows/api/asgi.py)."""

    @csrf_exempt  # session requests get the CSRF check in _refusal; token requests are exempt by design
    async def view(request: HttpRequest, **kwargs: Any) -> HttpResponse:
        handler = methods.get(request.method or "")
        if handler is None:
            return _not_allowed(request, methods)
        return await db_run(_answer, request, handler, kwargs)

    return view


def api_endpoint_async(methods: Mapping[str, Callable[..., Awaitable[Any]]]) -> Callable[..., Any]:
    """api_endpoint for coroutine handlers. Under ASGI Django cancels an async view when the client disconnects,
    so a handler that does its work in several `db_run` steps stops at the next step instead of finishing
    work nobody will read (a thread step itself cannot be interrupted, so keep each one bounded)."""

    @csrf_exempt
    async def view(request: HttpRequest, **kwargs: Any) -> HttpResponse:
        handler = methods.get(request.method or "")
        if handler is None:
            return _not_allowed(request, methods)
        try:
            refused = await db_run(_refusal, request)
            return refused or await handler(request, **kwargs)
        except Exception as exc:  # noqa: BLE001 - the API answers JSON whatever happens (CancelledError is not one)
            return _translated(request, exc)

    return view
