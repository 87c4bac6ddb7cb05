"""The WebSocket Origin check: scheme, host and port must match this site or a trusted origin (as CSRF does).

Channels' AllowedHostsOriginValidator compares only the Origin's host name with ALLOWED_HOSTS, so a page served
from another port of the same host (`http://127.0.0.1:9999`) could open the socket with the user's session
cookie and read chains live (cross-site WebSocket hijacking). Browsers always send Origin on WebSockets, so a
missing or unparsable Origin is refused too.
"""
from __future__ import annotations

from typing import Any
from urllib.parse import SplitResult, urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.http.request import split_domain_port, validate_host
from django.utils.http import is_same_domain

__all__ = ["SameOriginValidator", "origin_allowed"]

_DEFAULT_PORTS = {"http": 80, "https": 443}
_DEBUG_HOSTS = [".localhost", "127.0.0.1", "[::1]"]  # what Django's get_host allows with DEBUG and no ALLOWED_HOSTS
Origin = tuple[str, str, int]


def _normalised(url: str) -> Origin | None:
    """(scheme, host, port) with the default port filled in; None when it is not an http(s) origin."""
    try:
        parts: SplitResult = urlsplit(url.strip().lower())
        port = parts.port
    except ValueError:  # a malformed port or IPv6 literal
        return None
    if parts.scheme not in _DEFAULT_PORTS or not parts.hostname:
        return None
    return parts.scheme, parts.hostname, port or _DEFAULT_PORTS[parts.scheme]


def _headers(scope: dict[str, Any]) -> dict[bytes, bytes]:
    return {name.lower(): value for name, value in scope.get("headers", [])}


def _is_secure(scope: dict[str, Any], headers: dict[bytes, bytes]) -> bool:
    if scope.get("scheme") == "wss":
        return True
    proxy_header = getattr(settings, "SECURE_PROXY_SSL_HEADER", None)
    if not proxy_header:
        return False
    name, secure_value = proxy_header  # e.g. ("HTTP_X_FORWARDED_PROTO", "https")
    wire_name = name.removeprefix("HTTP_").replace("_", "-").lower().encode("latin-1")
    return headers.get(wire_name, b"").decode("latin-1").split(",")[0].strip() == secure_value


def _site_origin(scope: dict[str, Any], headers: dict[bytes, bytes]) -> Origin | None:
    """This site's own origin as the browser addressed it, when its Host is one we serve."""
    host = headers.get(b"host", b"").decode("latin-1")
    domain, _port = split_domain_port(host)
    allowed = settings.ALLOWED_HOSTS or (_DEBUG_HOSTS if settings.DEBUG else [])
    if not domain or not validate_host(domain, allowed):
        return None
    scheme = "https" if _is_secure(scope, headers) else "http"
    return _normalised(f"{scheme}://{host}")


def _trusted(origin_url: str, origin: Origin) -> bool:
    """CSRF_TRUSTED_ORIGINS, exact or `scheme://*.domain` wildcards, as Django's CSRF middleware reads them."""
    for trusted in settings.CSRF_TRUSTED_ORIGINS:
        if "*" in trusted:
            parts = urlsplit(trusted.lower())
            netloc = urlsplit(origin_url.strip().lower()).netloc
            if parts.scheme == origin[0] and is_same_domain(netloc, parts.netloc.lstrip("*")):
                return True
        elif _normalised(trusted) == origin:
            return True
    return False


def origin_allowed(scope: dict[str, Any]) -> bool:
    headers = _headers(scope)
    raw = headers.get(b"origin", b"").decode("latin-1")
    origin = _normalised(raw) if raw else None
    if origin is None:
        return False
    return origin == _site_origin(scope, headers) or _trusted(raw, origin)


class SameOriginValidator:
    """ASGI middleware: a WebSocket whose Origin is not this exact site (or a trusted origin) is refused."""

    def __init__(self, application: Any) -> None:
        self.application = application

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if scope.get("type") == "websocket" and not origin_allowed(scope):
            return await WebsocketDenier()(scope, receive, send)
        return await self.application(scope, receive, send)
