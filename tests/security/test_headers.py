"""Security headers on every page, API answer and admin screen, and HTML that a strict CSP lets run.

Routes come from the URL resolvers (tests/security/urls_enum.py), so a page added later is checked too."""
from __future__ import annotations

import re

import pytest
from django.test import Client

from flows.models import ProviderConfig
from pentagi_web.security import CONTENT_SECURITY_POLICY
from tests.security.urls_enum import all_routes, fill

pytestmark = pytest.mark.django_db
INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)[^>]*>", re.IGNORECASE)
EVENT_HANDLER = re.compile(r"<[^>]+\son[a-z]+\s*=", re.IGNORECASE)
MIN_PAGES = 20
STRICTEST_POLICY = "default-src 'none'"


def _provider_id() -> int:
    """A real upstream, so the staff providers pages (/providers/{provider_id}/...) resolve to an object."""
    return ProviderConfig.objects.create(name="sweep", base_url="http://127.0.0.1:9/v1", model="m").pk


@pytest.fixture
def ids(make_chain, tool_round, staff_user) -> dict[str, object]:
    chain = make_chain(tool_round, owner=staff_user)
    flow = chain.agent.flow
    return {"flow_id": flow.pk, "chain_id": chain.pk, "seq": 1, "profile": "agent", "rest": "anything",
            "app_label": "flows", "object_id": flow.pk, "model_name": "flow", "content_type_id": 1,
            "url": "flows/flow/", "id": 1, "provider_id": _provider_id()}


def _responses(client: Client, ids: dict[str, object]) -> list[tuple[str, object]]:
    paths = [p for p in (fill(r, ids) for r in all_routes()) if p and not p.startswith("/accounts/logout/")]
    assert len(paths) >= MIN_PAGES
    return [(path, client.get(path)) for path in paths]


def _assert_headers(path: str, response) -> None:
    policy = response.headers.get("Content-Security-Policy", "")
    # Ours, or a stricter one a view sets itself (raw message text is served with "default-src 'none'").
    assert policy in (CONTENT_SECURITY_POLICY, STRICTEST_POLICY), (path, response.status_code, policy)
    assert response.headers.get("X-Content-Type-Options") == "nosniff", path
    assert response.headers.get("X-Frame-Options") == "DENY", path
    assert response.headers.get("Referrer-Policy") == "same-origin", path


def test_the_policy_allows_no_inline_script_no_plugins_and_no_framing():
    directives = dict(d.strip().split(" ", 1) for d in CONTENT_SECURITY_POLICY.split(";"))
    assert directives["script-src"] == "'self'" and directives["style-src"] == "'self'"
    assert directives["object-src"] == "'none'" and directives["frame-ancestors"] == "'none'"
    assert [name for name, value in directives.items() if "unsafe" in value] == ["style-src-attr"]


def test_every_page_of_a_logged_in_staff_user_carries_the_security_headers(ids, staff_user):
    client = Client()
    client.force_login(staff_user)
    for path, response in _responses(client, ids):
        _assert_headers(path, response)


def test_anonymous_answers_and_errors_carry_them_too(ids):
    for path, response in _responses(Client(), ids):
        _assert_headers(path, response)
    _assert_headers("404", Client().get("/no/such/page/"))


def test_no_page_has_inline_script_or_event_handler_attributes(ids, staff_user):
    client = Client()
    client.force_login(staff_user)
    pages = [(p, r) for p, r in _responses(client, ids) if "text/html" in r.headers.get("Content-Type", "")]
    assert len(pages) >= 10
    for path, response in pages:
        html = response.content.decode()
        assert not INLINE_SCRIPT.search(html), (path, INLINE_SCRIPT.search(html))
        assert not EVENT_HANDLER.search(html), (path, EVENT_HANDLER.search(html))
