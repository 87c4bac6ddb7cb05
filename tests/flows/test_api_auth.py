"""API authentication (bearer tokens, sessions with CSRF), JSON errors everywhere, and the OpenAPI document."""
from __future__ import annotations

from unittest import mock

import pytest
from django.urls import get_resolver

from flows.ingest import api_token_create
from flows.models import ApiToken, Flow
from tests.app_fixtures import JsonClient

pytestmark = pytest.mark.django_db


def test_no_credentials_is_a_json_401(anon_client):
    resp = anon_client.get("/api/flows")
    assert resp.status_code == 401 and resp.json()["error"] == "unauthorized"
    assert anon_client.post("/api/flows", {"title": "x"}).status_code == 401
    assert not Flow.objects.exists()


def test_a_wrong_or_revoked_token_is_a_401(user):
    token, raw = api_token_create(user=user)
    assert JsonClient(HTTP_AUTHORIZATION="Bearer pgw_nope").get("/api/flows").status_code == 401
    token.delete()
    assert JsonClient(HTTP_AUTHORIZATION=f"Bearer {raw}").get("/api/flows").status_code == 401


def test_a_token_of_a_deactivated_user_is_a_401(user, api_client):
    user.is_active = False
    user.save()
    assert api_client.get("/api/flows").status_code == 401


def test_only_the_tokens_hash_is_stored_and_use_is_recorded(user, api_client, api_token):
    stored = ApiToken.objects.get(user=user)
    assert api_token not in (stored.key_hash, stored.prefix) and api_token.startswith(stored.prefix)
    assert stored.last_used_at is None
    api_client.get("/api/flows")
    stored.refresh_from_db()
    assert stored.last_used_at is not None


def test_session_writes_need_the_csrf_token_but_token_writes_do_not(session_client, api_client):
    refused = session_client.post("/api/flows", {"title": "x"})
    assert refused.status_code == 403 and refused.json()["error"] == "csrf_failed"
    assert session_client.get("/api/flows").status_code == 200  # reads need no token
    session_client.get("/accounts/login/")  # renders a form, so it sets the csrftoken cookie
    csrf = session_client.cookies["csrftoken"].value
    assert session_client.post("/api/flows", {"title": "x"}, HTTP_X_CSRFTOKEN=csrf).status_code == 201
    assert api_client.post("/api/flows", {"title": "y"}).status_code == 201


def test_wrong_methods_get_a_json_405(api_client):
    resp = api_client.delete("/api/flows")
    assert resp.status_code == 405 and resp.json()["error"] == "method_not_allowed"
    assert "GET" in resp["Allow"]


def test_unknown_api_paths_are_a_json_404(api_client):
    resp = api_client.get("/api/nothing/here")
    assert resp.status_code == 404 and resp.json()["error"] == "not_found"


@pytest.mark.parametrize("path", ["/api/flows/1%0A/agents", "/api/%0A", "/api/chains/%0D%0A1"])
def test_unknown_api_paths_with_a_newline_are_a_json_404_not_an_html_page(api_client, path):
    resp = api_client.post(path, {})
    assert resp.status_code == 404 and resp.json()["error"] == "not_found"


def test_an_unexpected_failure_is_a_json_500_not_an_html_page(api_client):
    with mock.patch("flows.api.views_flows.Flow.objects.visible_to", side_effect=RuntimeError("boom")):
        resp = api_client.get("/api/flows")
    assert resp.status_code == 500 and resp.json() == {"error": "internal_error", "detail": "unexpected server error"}


def test_the_openapi_document_lists_every_api_route(anon_client):
    schema = anon_client.get("/api/openapi.json").json()
    assert schema["openapi"].startswith("3.1")
    routes = {str(p.pattern) for p in get_resolver("flows.api.urls").url_patterns}
    documented = set(schema["paths"])
    for route in routes - {r"^openapi\.json/?$", r"^(?P<rest>[\s\S]*)$"}:
        path = "/api/" + route.strip("^$").removesuffix("/?").replace(r"(?P<flow_id>\d{1,18})", "{flow_id}") \
            .replace(r"(?P<chain_id>\d{1,18})", "{chain_id}").replace("(?P<profile>[a-z]{1,20})", "{profile}")
        assert path in documented, path
    for path_item in schema["paths"].values():
        for op in path_item.values():
            for response in op["responses"].values():
                for media in response.get("content", {}).values():
                    ref = media["schema"].get("$ref", "")
                    assert ref.split("/")[-1] in schema["components"]["schemas"] or not ref
