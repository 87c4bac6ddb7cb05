"""The providers page: staff add, edit, test and delete upstreams in the browser; keys never come back in full;
a user who is not staff is told how to become staff and can change nothing."""
from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from flows.models import ProviderConfig, ProviderKind

pytestmark = pytest.mark.django_db

KEY = "sk-live-0123456789abcdefWXYZ"


class ModelListing:
    """A loopback endpoint answering GET .../models with `models`, or `status` when set; it keeps each request's
    path and headers so a test can see what the check sent."""

    def __init__(self) -> None:
        self.models: list[str] = ["gpt-test", "gpt-other"]
        self.status = 200
        self.seen: list[tuple[str, dict[str, str]]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                owner.seen.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
                body = json.dumps({"data": [{"id": m} for m in owner.models]} if owner.status == 200
                                  else {"error": {"message": "bad key " + KEY}}).encode()
                self.send_response(owner.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def listing() -> Iterator[ModelListing]:
    found = ModelListing()
    yield found
    found.server.shutdown()
    found.server.server_close()


def provider(**fields: Any) -> ProviderConfig:
    values = {"name": "up", "kind": ProviderKind.OPENAI, "base_url": "https://example.invalid/v1", "api_key": KEY,
              "model": "gpt-test", **fields}
    return ProviderConfig.objects.create(**values)


def form(**fields: Any) -> dict[str, Any]:
    return {"name": "lab", "kind": "openai", "base_url": "https://llm.example/v1", "api_key": KEY, "model": "m",
            "timeout_seconds": 30, "max_attempts": 2, "max_output_tokens": 1024, "prompt_cost_per_mtok": 0,
            "completion_cost_per_mtok": 0, **fields}


def test_staff_adds_a_provider_and_its_key_is_never_shown_back(staff_client_for):
    resp = staff_client_for.post("/providers/new/", form())
    assert resp.status_code == 302 and resp["Location"] == "/providers/"
    row = ProviderConfig.objects.get(name="lab")
    assert row.api_key == KEY
    for page in ("/providers/", f"/providers/{row.pk}/"):
        html = staff_client_for.get(page).content.decode()
        assert KEY not in html and KEY[:-4] not in html
        assert "…WXYZ" in html


def test_every_provider_kind_can_be_chosen_anthropic_included(staff_client_for):
    html = staff_client_for.get("/providers/new/").content.decode()
    for kind in ProviderKind:
        assert f'value="{kind.value}"' in html
    assert staff_client_for.post("/providers/new/", form(name="claude", kind="anthropic")).status_code == 302
    assert ProviderConfig.objects.get(name="claude").kind == ProviderKind.ANTHROPIC


def test_editing_with_a_blank_key_keeps_the_stored_key(staff_client_for):
    row = provider()
    resp = staff_client_for.post(f"/providers/{row.pk}/", form(name="up", api_key="", model="gpt-next"))
    assert resp.status_code == 302
    row.refresh_from_db()
    assert (row.api_key, row.model) == (KEY, "gpt-next")


def test_a_refused_form_says_why_and_saves_nothing(staff_client_for):
    resp = staff_client_for.post("/providers/new/", form(base_url="not a url at all", timeout_seconds=0))
    assert resp.status_code == 400
    assert b"Enter a valid URL" in resp.content
    assert not ProviderConfig.objects.exists()


def test_deleting_asks_for_a_post_and_removes_the_row(staff_client_for):
    row = provider()
    assert staff_client_for.get(f"/providers/{row.pk}/delete/").status_code == 405
    assert ProviderConfig.objects.filter(pk=row.pk).exists()
    assert staff_client_for.post(f"/providers/{row.pk}/delete/").status_code == 302
    assert not ProviderConfig.objects.filter(pk=row.pk).exists()
    assert staff_client_for.post(f"/providers/{row.pk}/delete/").status_code == 404


def test_testing_an_openai_provider_lists_its_models_with_the_key_as_bearer(staff_client_for, listing):
    row = provider(base_url=listing.url + "/v1")
    resp = staff_client_for.post(f"/providers/{row.pk}/test/", follow=True)
    text = resp.content.decode()
    assert "up: reachable, 2 models (gpt-test, gpt-other)" in text
    assert listing.seen == [("/v1/models", listing.seen[0][1])]
    assert listing.seen[0][1]["authorization"] == f"Bearer {KEY}"
    assert KEY not in text


def test_testing_an_anthropic_provider_sends_the_key_as_x_api_key(staff_client_for, listing):
    row = provider(kind=ProviderKind.ANTHROPIC, base_url=listing.url, model="claude-x")
    listing.models = ["claude-y"]
    text = staff_client_for.post(f"/providers/{row.pk}/test/", follow=True).content.decode()
    assert "the configured model claude-x is not among them" in text
    path, headers = listing.seen[0]
    assert path == "/v1/models" and headers["x-api-key"] == KEY and "anthropic-version" in headers


def test_a_refused_key_is_reported_without_echoing_the_upstream_body(staff_client_for, listing):
    listing.status = 401
    row = provider(base_url=listing.url + "/v1")
    text = staff_client_for.post(f"/providers/{row.pk}/test/", follow=True).content.decode()
    assert "up: the key was refused (HTTP 401)" in text
    assert "bad key" not in text and KEY not in text


def test_an_unreachable_provider_is_reported(staff_client_for, listing):
    url = listing.url
    listing.server.shutdown()
    listing.server.server_close()
    row = provider(base_url=url + "/v1")
    text = staff_client_for.post(f"/providers/{row.pk}/test/", follow=True).content.decode()
    assert "up: the upstream model endpoint is unreachable" in text


def test_the_extractive_kind_has_nothing_to_reach(staff_client_for):
    row = provider(kind=ProviderKind.EXTRACTIVE, base_url="", api_key="")
    text = staff_client_for.post(f"/providers/{row.pk}/test/", follow=True).content.decode()
    assert "nothing to connect to" in text


def test_a_user_who_is_not_staff_is_told_how_to_become_staff_and_changes_nothing(client_for, staff_user):
    row = provider()
    resp = client_for.get("/providers/")
    assert resp.status_code == 403
    html = resp.content.decode()
    assert "manage.py createsuperuser" in html and KEY[-4:] not in html and "Only staff" in html
    assert 'href="/admin/"' not in html  # the header's admin link is for staff only
    assert client_for.post("/providers/new/", form()).status_code == 403
    assert client_for.post(f"/providers/{row.pk}/", form(name="up", model="stolen")).status_code == 403
    assert client_for.post(f"/providers/{row.pk}/delete/").status_code == 403
    assert client_for.post(f"/providers/{row.pk}/test/").status_code == 403
    row.refresh_from_db()
    assert row.model == "gpt-test" and ProviderConfig.objects.count() == 1


def test_staff_see_the_admin_link_and_the_providers_link(staff_client_for):
    html = staff_client_for.get("/providers/").content.decode()
    assert 'href="/admin/"' in html and 'href="/providers/"' in html


def test_the_pages_need_a_login(anon_client):
    resp = anon_client.get("/providers/")
    assert resp.status_code == 302 and "/accounts/login/" in resp["Location"]


def test_manage_py_run_says_how_to_get_a_staff_account_while_none_exists(django_user_model, user):
    from io import StringIO

    from flows.management.commands.run import Command

    said = StringIO()
    Command(stdout=said)._staff_hint()
    assert "manage.py createsuperuser" in said.getvalue()
    django_user_model.objects.create_user("boss", password="x-boss-password-1", is_staff=True)
    quiet = StringIO()
    Command(stdout=quiet)._staff_hint()
    assert quiet.getvalue() == ""
