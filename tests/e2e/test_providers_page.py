"""Issue 24 item 6 in the browser, under the real CSP, at 1440 and 390 px: a staff user lists providers, adds one,
tests its connection against a scripted OpenAI-compatible endpoint (and a dead one), edits it without the key ever
being shown back, and deletes it; a non-staff user is told how to become staff."""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.conftest import PASSWORD, Server, login, screenshot
from tests.fakes import free_port
from tests.flows.llm_fakes import FakeEndpoint, running_endpoint

pytestmark = pytest.mark.browser

OVERFLOW = "document.documentElement.scrollWidth - document.documentElement.clientWidth"
KEY = "sk-browser-test-key-9876"
STAFF_CODE = """
from django.contrib.auth import get_user_model
get_user_model().objects.create_user("stella", password={password!r}, is_staff=True)
print("SETUP{{}}")
"""


@pytest.fixture(scope="module")
def staff(server: Server) -> str:
    server.manage_shell(STAFF_CODE.format(password=PASSWORD))
    return "stella"


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeEndpoint]:
    with running_endpoint() as endpoint:
        endpoint.models_payload = {"object": "list", "data": [{"id": "scripted-model", "object": "model"}]}
        yield endpoint


def _no_sideways_scroll(page) -> None:
    assert page.evaluate(OVERFLOW) <= 0


def _flash(page) -> str:
    return page.locator(".flash").inner_text()


@pytest.mark.parametrize("width", [1440, 390])
def test_staff_add_test_edit_and_delete_a_provider(page, server, staff, upstream, width):
    name = f"scripted-{width}"
    page.set_viewport_size({"width": width, "height": 900})
    page.context.clear_cookies()
    login(page, server, staff)
    page.goto(server.url + "/providers/")
    _no_sideways_scroll(page)
    page.click("text=Add a provider…")
    page.fill("#id_name", name)
    page.select_option("#id_kind", "openai")
    page.fill("#id_base_url", upstream.url)
    page.fill("#id_api_key", KEY)
    page.fill("#id_model", "scripted-model")
    _no_sideways_scroll(page)
    page.click("form.provider-form button[type=submit]")
    page.wait_for_url(server.url + "/providers/")
    assert f"Saved provider {name}" in _flash(page)
    row = page.locator(f"tr[data-provider='{name}']")
    assert row.is_visible() and KEY not in page.content() and "…9876" in row.inner_text()
    _no_sideways_scroll(page)
    wrap = page.locator(".providers-table").locator("xpath=..")
    assert wrap.evaluate("w => w.scrollWidth - w.clientWidth") <= 0  # no sideways scroll inside the card either
    assert page.locator(".providers-table thead").is_visible() == (width > 700)  # a card per provider on a phone
    screenshot(page, f"providers-{width}")

    listings = upstream.model_listings
    row.locator("text=Test connection").click()
    page.wait_for_url(server.url + "/providers/")
    assert upstream.model_listings == listings + 1
    assert upstream.requests == [] or all(r["auth"] == f"Bearer {KEY}" for r in upstream.requests)
    assert name in _flash(page) and "scripted-model" in _flash(page)
    assert page.locator(".flash .flash-success").count() == 1

    page.locator(f"tr[data-provider='{name}']").locator("text=Edit").click()
    assert page.locator("#id_api_key").input_value() == ""  # write-only: never rendered back
    page.fill("#id_base_url", f"http://127.0.0.1:{free_port()}/v1")  # nothing listens there
    page.click("form.provider-form button[type=submit]")
    page.wait_for_url(server.url + "/providers/")
    stored = server.db("SELECT api_key, base_url FROM flows_providerconfig WHERE name = ?", (name,))
    assert stored[0][0] == KEY and stored[0][1].endswith("/v1")  # a blank key field kept the key
    page.locator(f"tr[data-provider='{name}']").locator("text=Test connection").click()
    page.wait_for_url(server.url + "/providers/")
    assert page.locator(".flash .flash-error").count() == 1 and name in _flash(page)

    page.locator(f"tr[data-provider='{name}'] .provider-delete > summary").click()
    page.locator(f"tr[data-provider='{name}']").locator(f"text=Delete {name}").click()
    page.wait_for_url(server.url + "/providers/")
    assert f"Deleted provider {name}" in _flash(page)
    assert server.db("SELECT count(*) FROM flows_providerconfig WHERE name = ?", (name,))[0][0] == 0


@pytest.mark.parametrize("width", [1440, 390])
def test_a_refused_form_says_why_and_saves_nothing(page, server, staff, width):
    page.set_viewport_size({"width": width, "height": 900})
    page.context.clear_cookies()
    login(page, server, staff)
    page.goto(server.url + "/providers/new/")
    page.fill("#id_name", f"bad-{width}")
    page.fill("#id_base_url", "not a url at all")
    page.fill("#id_timeout_seconds", "0")
    page.evaluate("document.querySelector('form.provider-form').noValidate = true")  # the server's own checks
    page.click("form.provider-form button[type=submit]")
    errors = page.locator(".field-error")
    assert errors.count() == 2 and "URL" in errors.nth(0).inner_text()
    _no_sideways_scroll(page)
    assert server.db("SELECT count(*) FROM flows_providerconfig WHERE name = ?", (f"bad-{width}",))[0][0] == 0


@pytest.mark.parametrize("width", [1440, 390])
def test_a_user_who_is_not_staff_is_told_how_to_become_staff(page, server, width):
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(server.url + "/providers/")  # logged in as alice, not staff
    assert "createsuperuser" in page.locator(".not-staff").inner_text()
    _no_sideways_scroll(page)
    page.goto(server.url + "/providers/new/")
    assert page.locator("#id_name").count() == 0
