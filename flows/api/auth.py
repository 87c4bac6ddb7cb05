"""API authentication: `Authorization: Bearer <token>` (agents) or the browser's session (with CSRF)."""
from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.middleware.csrf import CsrfViewMiddleware

from flows.ingest import InvalidToken, bearer_user, bearer_value

__all__ = ["authenticate", "csrf_failure"]


def authenticate(request: HttpRequest) -> tuple[Any, bool]:
    """(user, via_session). A bearer header that does not match a token is a failure, not a fallback."""
    raw = bearer_value(request.headers.get("Authorization", ""))
    if raw is not None:
        try:
            return bearer_user(raw), False
        except InvalidToken:
            return None, False
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated and user.is_active:
        return user, True
    return None, False


class _CsrfCheck(CsrfViewMiddleware):
    def _reject(self, request, reason):
        return reason


def csrf_failure(request: HttpRequest) -> str | None:
    """None when the session request passes Django's CSRF check, else the reason."""
    check = _CsrfCheck(lambda req: None)
    check.process_request(request)
    return check.process_view(request, lambda req: None, (), {})
