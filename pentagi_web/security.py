"""Security headers every response carries (the HTTPS switch itself is `HTTPS=true`, in settings).

The Content-Security-Policy allows scripts, styles, images, fonts and sockets from this origin only: no inline
`<script>`, no `on*=` handlers, no `eval`, no framing, forms post only here. Style *attributes* stay allowed
(`style-src-attr 'unsafe-inline'`): the window and token bars are sized by a server-computed `style="width:
N%"`, and Django's admin uses style attributes; `<style>` elements and foreign stylesheets stay refused.
"""
from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.utils.deprecation import MiddlewareMixin

__all__ = ["CONTENT_SECURITY_POLICY", "HSTS_SECONDS", "ContentSecurityPolicyMiddleware"]

CONTENT_SECURITY_POLICY = "; ".join((
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "style-src-attr 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self'",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
))
HSTS_SECONDS = 365 * 24 * 3600


class ContentSecurityPolicyMiddleware(MiddlewareMixin):  # the mixin makes it async-capable under ASGI
    """Adds the policy to every response that does not set its own."""

    def process_response(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        return response
