"""Twelve live tabs: each chain or flow page holds one socket, so a user's cap (here WS_MAX_PER_USER=12) is twelve
tabs (eight chain pages, four flow pages), every one of them live and updated by one append; a thirteenth says why
it is not, and comes back once a tab is closed."""
from __future__ import annotations

import pytest

from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS, PASSWORD, serve, wait_for_js
from tests.e2e.test_dashboard import campaign_batches, plain_chain

pytestmark = pytest.mark.browser
TABS = 12
FLOW_TABS = 4  # of the twelve: flow pages, the rest chain pages


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with serve(tmp_path_factory, {"WS_MAX_PER_USER": str(TABS)}) as srv:
        yield srv


@pytest.fixture
def context(server):
    """One logged-in browser context: its tabs share the session, as a user's tabs do."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        ctx = browser.new_context(viewport={"width": 1440, "height": 900})
        ctx.set_default_timeout(30_000)
        login = ctx.new_page()
        login.goto(server.url + "/accounts/login/")
        login.fill("#id_username", "alice")
        login.fill("#id_password", PASSWORD)
        login.click("button[type=submit]")
        login.wait_for_url(server.url + "/")
        login.close()
        yield ctx
        browser.close()


def _watch_sockets(tab, opened: list[str]) -> None:
    tab.on("websocket", lambda ws: opened.append(ws.url))


def test_twelve_tabs_are_live_on_one_socket_each_and_a_thirteenth_says_why_not(context, server):
    chain_id = plain_chain(server, "Twelve tabs")
    flow_id = server.api("GET", f"/api/chains/{chain_id}?limit=1")["flow_id"]
    opened: list[str] = []
    tabs = [context.new_page() for _ in range(TABS)]
    chain_tabs, flow_tabs = tabs[:TABS - FLOW_TABS], tabs[TABS - FLOW_TABS:]
    for tab in chain_tabs:
        _watch_sockets(tab, opened)
        tab.goto(f"{server.url}/chains/{chain_id}/")
    for tab in flow_tabs:
        _watch_sockets(tab, opened)
        tab.goto(f"{server.url}/flows/{flow_id}/")
    for tab in chain_tabs:
        tab.wait_for_selector("#live-status[data-state='live']")
        tab.wait_for_selector("#gateway-calls[data-live=on]")  # the calls table rides on the same socket
    for tab in flow_tabs:
        tab.wait_for_selector("#timeline-status[data-state='live']")
    assert len(opened) == TABS, opened  # one socket per page, the flow pages' included
    batch = campaign_batches(3)[0]
    last = server.append(chain_id, batch)["last_seq"]
    for tab in chain_tabs:
        wait_for_js(tab, f"window.pentagiLive.state.lastSeq >= {last}")
    messages_cell = f"#flow-agents tr:has(a[href='/chains/{chain_id}/']) td:nth-child(2)"
    for tab in flow_tabs:  # every flow page re-read its agents on the append: the new count, without a reload
        wait_for_js(tab, f"(document.querySelector(\"{messages_cell}\") || {{}}).textContent === '{last}'")
    extra = context.new_page()
    extra.goto(f"{server.url}/chains/{chain_id}/")
    extra.wait_for_selector("#live-status[data-state='capped']")
    assert f"{TABS} live tabs open" in extra.locator("#live-status").inner_text()
    tabs[1].close()  # its slot is free once the server has seen the socket go: reload until it has
    for _ in range(40):
        extra.reload()
        extra.wait_for_selector("#live-status[data-state='live'], #live-status[data-state='capped']")
        if extra.locator("#live-status").get_attribute("data-state") == "live":
            break
    assert extra.locator("#live-status").get_attribute("data-state") == "live"
