"""The flow page's agents stay live: an agent that joins after the page opened shows up, is listened to, and the
most recently active agent moves to the top (without a reload)."""
from __future__ import annotations

import pytest

from tests.e2e.conftest import Server, wait_for_js

pytestmark = pytest.mark.browser


def _order(page) -> list[str]:
    return page.eval_on_selector_all("#flow-agents .agent", "nodes => nodes.map(n => n.dataset.agentType)")


def test_an_agent_joining_later_is_shown_and_followed_most_recent_first(page, server: Server) -> None:
    flow = server.api("POST", "/api/flows", {"title": "Live agents"})
    primary = server.api("POST", f"/api/flows/{flow['id']}/agents", {"agent_type": "primary_agent"})
    server.append(primary["chain_id"], [{"role": "system", "content": "lead"}, {"role": "user", "content": "go"}])
    page.goto(f"{server.url}/flows/{flow['id']}/")
    page.wait_for_selector("#timeline-status[data-state='live']")
    page.evaluate("window.__notReloaded = true")
    searcher = server.api("POST", f"/api/flows/{flow['id']}/agents", {"agent_type": "searcher"})
    server.append(primary["chain_id"], [{"role": "assistant", "content": "asking the searcher"}])
    page.wait_for_selector("#flow-agents .agent[data-agent-type='searcher']", timeout=60_000)
    # The page has one socket for the whole flow; the server joins the new agent's chain to it, which the
    # searcher moving to the top after its own append (below) proves without a page reload.
    assert _order(page)[0] == "primary_agent"
    server.append(searcher["chain_id"], [{"role": "system", "content": "find"}, {"role": "user", "content": "cve"}])
    wait_for_js(page, "document.querySelector('#flow-agents .agent').dataset.agentType === 'searcher'",
                timeout=60_000)
    assert _order(page) == ["searcher", "primary_agent"] and page.evaluate("window.__notReloaded") is True
