"""Every URL the project serves, found by walking the URL resolvers, with path arguments filled from real objects.

New pages and API endpoints are covered by the security tests without anyone listing them."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from django.urls import URLPattern, URLResolver, get_resolver

__all__ = ["Route", "all_routes", "fill", "PUBLIC_PREFIXES"]

# Pages anyone may open: the login page, the logout action, the (data-free) API description, static files.
PUBLIC_PREFIXES = ("/accounts/login/", "/accounts/logout/", "/api/openapi.json", "/static/", "/admin/login/",
                   "/admin/logout/", "/admin/jsi18n/")
_ARG_RE = re.compile(r"<(?:(?P<conv>\w+):)?(?P<name>\w+)>|\(\?P<(?P<rname>\w+)>[^)]*\)")


@dataclass(frozen=True)
class Route:
    template: str   # e.g. "/chains/{chain_id}/messages/{seq}.txt"
    name: str

    @property
    def is_api(self) -> bool:
        return self.template.startswith("/api/")

    @property
    def is_admin(self) -> bool:
        return self.template.startswith("/admin/")


def _clean(regex: str) -> str:
    return regex.replace("^", "").replace("$", "").replace("\\Z", "").replace("/?", "/").replace("\\.", ".")


def _template(prefix: str, pattern: Any) -> str:
    text = _clean(str(pattern.pattern))
    text = _ARG_RE.sub(lambda m: "{" + (m.group("name") or m.group("rname")) + "}", text)
    return prefix + text


def _walk(resolver: URLResolver, prefix: str = "/") -> list[Route]:
    routes = []
    for entry in resolver.url_patterns:
        if isinstance(entry, URLResolver):
            routes += _walk(entry, _template(prefix, entry))
        elif isinstance(entry, URLPattern):
            routes.append(Route(_template(prefix, entry), entry.name or ""))
    return routes


def all_routes() -> list[Route]:
    """Concrete-able routes: catch-alls (`.*`) and other patterns with free regex parts are left out."""
    return [r for r in _walk(get_resolver()) if not any(ch in r.template for ch in "*+()[]|\\")]


def fill(route: Route, ids: dict[str, Any]) -> str | None:
    """The route's path with `ids` substituted; None when an argument has no value."""
    try:
        return route.template.format(**ids)
    except KeyError:
        return None
