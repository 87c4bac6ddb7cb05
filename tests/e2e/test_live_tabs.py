"""Twelve live tabs: each chain or flow page holds one socket, so a user's cap (here WS_MAX_PER_USER=12) is twelve
tabs, every one of them live; a thirteenth says why it is not, and comes back once a tab is closed."""
from __future__ import annotations

import pytest

from tests.e2e.conftest import serve, wait_for_js
from tests.e2e.test_dashboard import campaign_batches, plain_chain

pytestmark = pytest.mark.browser
TABS = 12


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with serve(tmp_path_factory, {"WS_MAX_PER_USER": str(TABS)}) as srv:
        yield srv


def _watch_sockets(tab, opened: list[str]) -> None:
    tab.on("websocket", lambda ws: opened.append(ws.url))


def test_twelve_tabs_are_live_on_one_socket_each_and_a_thirteenth_says_why_not(page, server):
    chain_id = plain_chain(server, "Twelve tabs")
    flow_id = server.api("GET", f"/api/chains/{chain_id}?limit=1")["flow_id"]
    opened: list[str] = []
    tabs = [page] + [page.context.new_page() for _ in range(TABS - 1)]
    for i, tab in enumerate(tabs):
        _watch_sockets(tab, opened)
        tab.goto(f"{server.url}/flows/{flow_id}/" if i == TABS - 1 else f"{server.url}/chains/{chain_id}/")
    for tab in tabs[:-1]:
        tab.wait_for_selector("#live-status[data-state='live']")
        tab.wait_for_selector("#gateway-calls[data-live=on]")  # the calls table rides on the same socket
    tabs[-1].wait_for_selector("#timeline-status[data-state='live']")
    assert len(opened) == TABS, opened  # one socket per page, the flow page's included
    batch = campaign_batches(3)[0]
    last = server.append(chain_id, batch)["last_seq"]
    for tab in tabs[:-1]:
        wait_for_js(tab, f"window.pentagiLive.state.lastSeq >= {last}")
    extra = page.context.new_page()
    extra.goto(f"{server.url}/chains/{chain_id}/")
    extra.wait_for_selector("#live-status[data-state='capped']")
    assert f"{TABS} live tabs open" in extra.locator("#live-status").inner_text()
    tabs[1].close()
    extra.reload()
    extra.wait_for_selector("#live-status[data-state='live']")
