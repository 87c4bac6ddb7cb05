"""API authentication: `Authorization: Bearer <token>` (agents) or the browser's session (with CSRF)."""
from __future__ import annotations

from datetime import timedelta

from django.http import HttpRequest
from django.middleware.csrf import CsrfViewMiddleware
from django.utils import timezone

from flows.models import ApiToken, hash_token

__all__ = ["authenticate", "csrf_failure", "LAST_USED_RESOLUTION"]

LAST_USED_RESOLUTION = timedelta(minutes=1)  # spare a write per request for busy agents


def _bearer(request: HttpRequest) -> str | None:
    header = request.headers.get("Authorization", "")
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


def authenticate(request: HttpRequest):
    """(user, via_session). A bearer header that does not match a token is a failure, not a fallback."""
    raw = _bearer(request)
    if raw is not None:
        token = ApiToken.objects.select_related("user").filter(key_hash=hash_token(raw)).first()
        if token is None or not token.user.is_active:
            return None, False
        now = timezone.now()
        if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        return token.user, False
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
