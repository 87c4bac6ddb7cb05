"""The chain page's context breakdown in a real browser under the real CSP: one bar and its table, the API's
figures, live on `view.updated` without a reload, at 1440 and 390 px."""
from __future__ import annotations

import pytest

from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS, PASSWORD, Server, wait_for_js
from tests.e2e.test_dashboard import campaign_batches, open_live

pytestmark = pytest.mark.browser

NO_OVERFLOW = "document.documentElement.scrollWidth <= document.documentElement.clientWidth"
TABLE_TOKENS = ("Object.fromEntries([...document.querySelectorAll('#context-breakdown tr[data-part]')]"
                ".map(r => [r.dataset.part, r.querySelector('td').textContent.replaceAll(',', '')]))")


def _csp_errors(page) -> list[str]:
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if "Content Security Policy" in m.text else None)
    return errors


def _api_tokens(server: Server, chain: int) -> dict[str, str]:
    context = server.api("GET", f"/api/chains/{chain}")["context"]
    return {p["key"]: str(p["tokens"]) for p in context["parts"]}


def test_the_breakdown_shows_the_apis_figures_and_follows_view_updated(page, server):
    errors = _csp_errors(page)
    ids = server.demo_flow("Breakdown live")
    batches = campaign_batches(seed=5)
    server.append(ids["chain"], batches[0])
    server.settle(ids["chain"])
    open_live(page, server, ids["chain"])
    assert page.evaluate(TABLE_TOKENS) == _api_tokens(server, ids["chain"])
    assert page.locator("svg.cb-bar rect").count() >= 2
    version = page.locator("#chain-live").get_attribute("data-view-version")
    for batch in batches[1:]:
        server.append(ids["chain"], batch)
    server.settle(ids["chain"])
    wait_for_js(page, f"document.getElementById('chain-live').dataset.viewVersion !== '{version}'")
    server.settle(ids["chain"])
    wanted = _api_tokens(server, ids["chain"])
    wait_for_js(page, f"JSON.stringify({TABLE_TOKENS}) === JSON.stringify({wanted!r})".replace("'", '"'))
    assert page.evaluate("window.__notReloaded") is True
    assert not errors, errors


def test_the_breakdown_fits_a_phone_and_reads_without_colour(server):
    from playwright.sync_api import sync_playwright

    ids = server.demo_flow("Breakdown phone")
    server.append(ids["chain"], campaign_batches(seed=6)[0])
    server.settle(ids["chain"])
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 390, "height": 844})
        errors = _csp_errors(page)
        page.goto(server.url + "/accounts/login/")
        page.fill("#id_username", "alice")
        page.fill("#id_password", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url(server.url + "/")
        page.goto(f"{server.url}/chains/{ids['chain']}/")
        table = page.locator("#context-breakdown")
        assert table.is_visible() and page.evaluate(NO_OVERFLOW)
        box = table.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390
        labels = page.locator("#context-breakdown tbody th").all_inner_texts()
        assert [t.split()[0] for t in labels] == ["System", "Summaries", "Recent", "Tool", "Reserved", "Free"]
        assert page.get_by_role("img", name="Context breakdown").count() == 1
        browser.close()
    assert not errors, errors
