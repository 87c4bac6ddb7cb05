"""Login rate limiting: failed logins are counted per client address and per (address, username) in the
Django cache (Redis when REDIS_URL is set, so every process shares the counts; process memory otherwise).

Past the limit, the login page answers 429 with a message saying when to retry, without checking the password
(so guessing stops even for the right password). A successful login clears the pair's count.
"""
from __future__ import annotations

import hashlib
import os
from typing import Any

from django.contrib.auth import views as auth_views
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse

__all__ = ["ThrottledLoginView", "client_address", "MAX_FAILURES_PER_USER", "MAX_FAILURES_PER_ADDRESS",
           "WINDOW_SECONDS"]

MAX_FAILURES_PER_USER = int(os.environ.get("LOGIN_MAX_FAILURES", 5))  # per address and username
MAX_FAILURES_PER_ADDRESS = MAX_FAILURES_PER_USER * 4  # one address trying many usernames
WINDOW_SECONDS = int(os.environ.get("LOGIN_LOCKOUT_SECONDS", 15 * 60))
HTTP_TOO_MANY_REQUESTS = 429


def client_address(request: HttpRequest) -> str:
    """REMOTE_ADDR: Daphne fills it from the socket (or from X-Forwarded-For with --proxy-headers)."""
    return str(request.META.get("REMOTE_ADDR") or "unknown")


def _key(*parts: str) -> str:
    digest = hashlib.sha256("\0".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return f"login-failures:{digest}"


def _keys(request: HttpRequest, username: str) -> tuple[str, str]:
    address = client_address(request)
    return _key("user", address, username.strip().lower()), _key("address", address)


def _count(key: str) -> int:
    return int(cache.get(key, 0))


def _bump(key: str) -> None:
    # add() only sets a missing key, so the window starts at the first failure and is not extended by later ones.
    if not cache.add(key, 1, WINDOW_SECONDS):
        try:
            cache.incr(key)
        except ValueError:  # expired between add() and incr()
            cache.add(key, 1, WINDOW_SECONDS)


class ThrottledLoginView(auth_views.LoginView):
    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        username = str(request.POST.get("username", ""))
        pair_key, address_key = _keys(request, username)
        if _count(pair_key) >= MAX_FAILURES_PER_USER or _count(address_key) >= MAX_FAILURES_PER_ADDRESS:
            return self._refused()
        response = super().post(request, *args, **kwargs)
        if request.user.is_authenticated:
            cache.delete(pair_key)
        else:
            _bump(pair_key)
            _bump(address_key)
        return response

    def _refused(self) -> HttpResponse:
        minutes = max(1, WINDOW_SECONDS // 60)
        context = self.get_context_data(form=self.get_form_class()(self.request),
                                        throttled=f"Too many failed logins from your address. "
                                                  f"Try again in {minutes} minutes.")
        response = self.render_to_response(context, status=HTTP_TOO_MANY_REQUESTS)
        response.headers["Retry-After"] = str(WINDOW_SECONDS)
        return response
