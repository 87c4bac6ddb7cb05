"""Issue 25 item 5 in a real browser: the chain page's cost card and the flow page's per-chain cost table show
what the window-aware strategy would have spent, and the table scrolls inside its card at 360 px."""
from __future__ import annotations

import pytest

from tests.e2e.conftest import screenshot, wait_for_js
from tests.e2e.test_pages_rest import PHONE, flow_with_turns, overflow

pytestmark = pytest.mark.browser
STATES = ("ready", "pending", "unknown")


def test_the_chain_and_flow_pages_show_the_window_strategys_cost(page, server):
    ids = flow_with_turns(server, "Window cost", 6)
    server.settle(ids["chain"])
    page.goto(f"{server.url}/chains/{ids['chain']}/")
    card = page.locator("#window-cost")
    assert card.is_visible() and "window-aware would spend" in card.inner_text()
    assert card.locator("[data-window-cost]").get_attribute("data-window-cost") in STATES
    page.goto(f"{server.url}/flows/{ids['flow']}/")
    row = page.locator(f'#chain-costs tr[data-chain-id="{ids["chain"]}"]')
    assert row.is_visible()
    state = row.locator("[data-window-cost]").get_attribute("data-window-cost")
    assert state in STATES
    if state == "ready":
        assert "input tokens" in row.inner_text()
    screenshot(page, "flow-chain-costs")
    page.set_viewport_size(PHONE)
    page.goto(f"{server.url}/flows/{ids['flow']}/")
    wait_for_js(page, "document.querySelector('#chain-costs') !== null")
    assert overflow(page) == 0
