"""Issue 12 outside the chain page, in a real browser: the settings preview follows typing without navigation,
shows a diff and keeps its column in view, and follows the chain picker; defaults are read-only for non-staff;
the flow timeline is live; the flows list, flow page, settings, upload and login pages have no horizontal
overflow at 360 px."""
from __future__ import annotations

import pytest

from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS, Server, screenshot, wait_for_js
from tests.e2e.test_dashboard import campaign_batches

pytestmark = pytest.mark.browser
PHONE = {"width": 360, "height": 740}


def overflow(page) -> int:
    """How many CSS pixels the page is wider than the viewport (0 = no horizontal scroll)."""
    return page.evaluate("document.documentElement.scrollWidth - window.innerWidth")


def changed_fields(page) -> list[str]:
    return page.eval_on_selector_all(".setting.is-changed label code", "els => els.map(e => e.textContent)")


def flow_with_turns(server: Server, title: str, turns: int) -> dict[str, int]:
    ids = server.demo_flow(title)
    for batch in campaign_batches(4)[:turns]:
        server.append(ids["chain"], batch)
    return ids


def test_the_preview_follows_typing_without_navigation_and_shows_a_diff(page, server):
    ids = flow_with_turns(server, "Typing preview", 9)
    page.goto(f"{server.url}/settings/?flow={ids['flow']}&chain={ids['chain']}")
    page.evaluate("window.__notReloaded = true")
    page.mouse.wheel(0, 400)
    page.wait_for_timeout(200)
    scrolled = page.evaluate("window.scrollY")
    before = set(changed_fields(page))  # the demo flow's own overrides differ from the defaults
    page.fill("#id_last_sec_bytes", "2048")  # no button pressed
    wait_for_js(page, "window.pentagiSettings.state.stats.shown > 0", timeout=60_000)
    assert page.evaluate("window.__notReloaded") is True
    assert abs(page.evaluate("window.scrollY") - scrolled) < 2
    counts = page.locator("#preview-diff-counts").inner_text()
    assert "added" in counts or "No view yet" in counts or "Same view" in counts
    assert page.locator("#preview-diff .diff-new .vmsg").count() > 0
    assert set(changed_fields(page)) == before | {"last_sec_bytes"}
    right = page.eval_on_selector("#preview-diff", "el => el.getBoundingClientRect().right")
    assert right <= page.viewport_size["width"]  # the "with these values" column is not cut off at 1440 px
    screenshot(page, "settings-preview-as-you-type")
    page.fill("#id_last_sec_bytes", str(50 * 1024))  # back to the default: the mark goes away
    wait_for_js(page, "window.pentagiSettings.state.stats.shown > 1", timeout=60_000)
    assert "last_sec_bytes" not in changed_fields(page)


def test_picking_another_chain_previews_on_it_without_navigation(page, server):
    first = flow_with_turns(server, "Picked first", 3)
    other = flow_with_turns(server, "Picked other", 3)
    page.goto(f"{server.url}/settings/?chain={first['chain']}")  # the defaults: every chain is offered
    page.evaluate("window.__notReloaded = true")
    page.select_option("#preview-chain", str(other["chain"]))  # no Preview button, no other change
    wait_for_js(page, "window.pentagiSettings.state.stats.shown > 0", timeout=60_000)
    assert page.evaluate("window.__notReloaded") is True
    assert f"on chain #{other['chain']}" in page.locator("#preview-h").inner_text()
    assert page.evaluate("window.pentagiSettings.state.stats.sent") == 1  # one request, not one per event


def test_defaults_are_read_only_for_a_non_staff_user(page, server):
    page.goto(f"{server.url}/settings/")
    assert page.locator("input[name=last_sec_bytes]").count() == 0
    assert page.locator("output#id_last_sec_bytes").inner_text() == "51200"
    assert page.locator("#save-btn").count() == 0


def test_the_flow_timeline_is_live(page, server):
    ids = server.demo_flow("Live timeline")
    page.goto(f"{server.url}/flows/{ids['flow']}/")
    page.wait_for_selector("#timeline-status[data-state='live']")
    page.evaluate("window.__notReloaded = true")
    for batch in campaign_batches(5)[:6]:
        server.append(ids["chain"], batch)
    wait_for_js(page, "window.pentagiFlow.state.refreshes > 0", timeout=60_000)
    page.wait_for_selector("#flow-timeline tr[data-event-id]")
    assert page.evaluate("window.__notReloaded") is True
    screenshot(page, "flow-timeline-live")


def test_no_page_outside_the_chain_page_scrolls_sideways_at_360_px(page, server):
    ids = flow_with_turns(server, "Phone width " + "x" * 80, 4)
    page.set_viewport_size(PHONE)
    pages = {"flows-list": "/", "flow": f"/flows/{ids['flow']}/", "settings": "/settings/",
             "settings-override": f"/settings/?flow={ids['flow']}&chain={ids['chain']}", "upload": "/flows/upload/"}
    wide = {}
    for name, path in pages.items():
        page.goto(server.url + path)
        if overflow(page) > 0:
            wide[name] = overflow(page)
        screenshot(page, f"phone-{name}", full_page=True)
    page.goto(f"{server.url}/settings/?flow={ids['flow']}&chain={ids['chain']}")
    button = page.locator("#preview-btn").bounding_box()
    assert button is not None and button["y"] + button["height"] <= PHONE["height"]  # the bar stays in sight
    assert wide == {}, wide


def test_the_login_page_fits_360_px(server):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport=PHONE)
        page.goto(server.url + "/accounts/login/")
        assert overflow(page) <= 0
        screenshot(page, "phone-login")
        browser.close()
