"""The flow page's agents: every agent of a session's flow with its chain, most recently active first, with the
agent loops the gateway flagged (escaped), and the fragment the live flow page re-reads."""
from __future__ import annotations

import re
from typing import Any

import pytest

from flows.gateway.threads import gateway_thread
from flows.models import AgentLoop

pytestmark = pytest.mark.django_db


def _agent(title: str, task: str) -> list[dict[str, Any]]:
    return [{"role": "system", "content": f"# {title}\n\nwork"}, {"role": "user", "content": task}]


PRIMARY = _agent("CREW ORCHESTRATION LEAD", "audit the host")
PENTESTER = _agent("SENIOR PENETRATION TESTING EXPERT", "scan the host")
SEARCHER = _agent("WEB INFORMATION RETRIEVAL AGENT", "look up the banner")


def _order(body: str) -> list[str]:
    return re.findall(r'data-agent-type="([a-z_]+)"', body)


def test_the_agents_fragment_lists_every_agent_most_recently_active_first(user: Any, session_client: Any) -> None:
    chains = {}
    for agent_type, messages in (("primary_agent", PRIMARY), ("pentester", PENTESTER), ("searcher", SEARCHER)):
        chains[agent_type] = gateway_thread(user=user, messages=messages, session="run", agent_type=agent_type).chain
    flow_id = next(iter(chains.values())).agent.flow_id
    assert _order(session_client.get(f"/flows/{flow_id}/agents/").content.decode()) == [
        "searcher", "pentester", "primary_agent"]
    gateway_thread(user=user, messages=[*PENTESTER, {"role": "assistant", "content": "port 22 is open"}],
                   session="run")
    body = session_client.get(f"/flows/{flow_id}/agents/").content.decode()
    assert _order(body) == ["pentester", "searcher", "primary_agent"]
    assert set(re.search(r'data-chains="([0-9,]*)"', body)[1].split(",")) == {str(c.pk) for c in chains.values()}
    page = session_client.get(f"/flows/{flow_id}/").content.decode()
    assert _order(page) == ["pentester", "searcher", "primary_agent"] and f"/flows/{flow_id}/agents/" in page


def test_loops_show_escaped_on_the_flow_and_chain_pages(user: Any, session_client: Any) -> None:
    chain = gateway_thread(user=user, messages=PENTESTER, session="loops", agent_type="pentester").chain
    AgentLoop.objects.create(chain=chain, tool_name="<b>run</b>", arguments='{"cmd": "<script>x</script>"}',
                             repeats=4, in_a_row=True, window=10, first_seq=1, last_seq=2)
    flow_page = session_client.get(f"/flows/{chain.agent.flow_id}/agents/").content.decode()
    assert "1 loop" in flow_page and "&lt;b&gt;run&lt;/b&gt;</code> ×4" in flow_page and "<b>run" not in flow_page
    chain_page = session_client.get(f"/chains/{chain.pk}/").content.decode()
    assert "Agent loops" in chain_page and "&lt;script&gt;" in chain_page and "<script>x" not in chain_page


def test_another_users_flow_agents_are_a_404(user: Any, django_user_model: Any, session_client: Any) -> None:
    other = django_user_model.objects.create_user("not-you", password="x")
    chain = gateway_thread(user=other, messages=PRIMARY, session="run").chain
    assert session_client.get(f"/flows/{chain.agent.flow_id}/agents/").status_code == 404
