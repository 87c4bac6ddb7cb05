"""Sessions against `manage.py run` with the openai SDK: a PentAGI-shaped run, the URL form, two users."""
from __future__ import annotations

import json
import urllib.error
import urllib.request
import uuid
from typing import Any

import openai
import pytest

from tests.flows.pipeline_live import api
from tests.gateway.agent_loop import TOOLS
from tests.gateway.conftest import Gateway
from tests.gateway.upstream_fake import MODEL

pytestmark = pytest.mark.timeout(300)

# System prompts opening the way PentAGI's do (a role title over the prompt), in our own words.
PROMPTS = {
    "primary_agent": "# CREW ORCHESTRATION LEAD\n\nYou hand subtasks to the specialists and track the work.",
    "pentester": "# SENIOR PENETRATION TESTING EXPERT\n\nYou test the authorized targets you are given.",
    "searcher": "# WEB INFORMATION RETRIEVAL AGENT\n\nYou find facts quickly and cite them.",
}


def _client(base_url: str, token: str, **headers: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=base_url, api_key=token, max_retries=0, timeout=60, default_headers=headers)


def _ask(client: openai.OpenAI, history: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """One call; the history with the answer appended, and the flow id the gateway answered with."""
    raw = client.chat.completions.with_raw_response.create(model=MODEL, messages=history,  # type: ignore[arg-type]
                                                           tools=TOOLS)  # type: ignore[arg-type]
    answer = raw.parse().choices[0].message.model_dump(exclude_none=True)
    return [*history, answer], int(raw.headers["X-Flow-Id"])


def _tool_result(history: list[dict[str, Any]], output: str) -> list[dict[str, Any]]:
    call_id = history[-1]["tool_calls"][0]["id"]
    return [*history, {"role": "tool", "tool_call_id": call_id, "content": output}]


def _agent(agent_type: str, task: str) -> list[dict[str, Any]]:
    return [{"role": "system", "content": PROMPTS[agent_type]}, {"role": "user", "content": task}]


def _pentagi_run(client: openai.OpenAI) -> set[int]:
    """The primary agent delegates to the pentester, which asks the searcher; then the primary goes on."""
    flows = set()
    primary, flow = _ask(client, _agent("primary_agent", f"audit the staging host (run {uuid.uuid4()})"))
    flows.add(flow)
    pentester, flow = _ask(client, _agent("pentester", "scan the staging host"))
    flows.add(flow)
    searcher, flow = _ask(client, _agent("searcher", "which CVEs affect OpenSSH 8.2?"))
    flows.add(flow)
    _searcher_done, flow = _ask(client, _tool_result(searcher, "CVE-2020-15778"))
    flows.add(flow)
    _pentester_done, flow = _ask(client, _tool_result(pentester, "22/tcp open ssh"))
    flows.add(flow)
    _primary_done, flow = _ask(client, _tool_result(primary, "pentester: ssh is open, CVE-2020-15778"))
    flows.add(flow)
    return flows


def _agents(gateway: Gateway, flow_id: int, token: str | None = None) -> dict[str, dict[str, Any]]:
    flow = api(gateway.base, "GET", f"/api/flows/{flow_id}", token or gateway.token)
    return {agent["agent_type"]: agent for agent in flow["agents"]}


def test_a_pentagi_shaped_run_with_one_session_header_is_one_flow_with_three_agents(gateway: Gateway) -> None:
    session = f"pentagi-{uuid.uuid4()}"
    flows = _pentagi_run(_client(gateway.v1, gateway.token, **{"X-Session-Id": session}))
    assert len(flows) == 1
    agents = _agents(gateway, flows.pop())
    assert set(agents) == {"primary_agent", "pentester", "searcher"}
    for agent in agents.values():  # each agent's whole conversation in its one chain: call, result, answer
        assert [m["role"] for m in gateway.chain(agent["chain_id"])["raw"]] == [
            "system", "user", "assistant", "tool", "assistant"]


def test_a_session_in_the_base_url_works_like_the_header(gateway: Gateway) -> None:
    session = f"url-{uuid.uuid4().hex}"
    flows = _pentagi_run(_client(f"{gateway.base}/s/{session}/v1", gateway.token))
    assert len(flows) == 1
    assert api(gateway.base, "GET", f"/api/flows/{next(iter(flows))}", gateway.token)["session_id"] == session


def test_without_a_session_each_agent_is_a_flow_of_its_own(gateway: Gateway) -> None:
    assert len(_pentagi_run(_client(gateway.v1, gateway.token))) == 3


def _other_token(gateway: Gateway) -> str:
    out = gateway.shell("from django.contrib.auth.models import User\nfrom flows.ingest import api_token_create\n"
                        "u, _ = User.objects.get_or_create(username='session-neighbour')\n"
                        "print('TOKEN', api_token_create(user=u)[1])")
    return next(x for x in out.splitlines() if x.startswith("TOKEN "))[6:]


def test_two_users_sending_one_session_id_keep_their_own_flows(gateway: Gateway) -> None:
    session, other = f"shared-{uuid.uuid4()}", _other_token(gateway)
    mine = _pentagi_run(_client(gateway.v1, gateway.token, **{"Helicone-Session-Id": session}))
    theirs = _pentagi_run(_client(gateway.v1, other, **{"Helicone-Session-Id": session}))
    assert len(mine) == len(theirs) == 1 and not mine & theirs
    assert set(_agents(gateway, theirs.pop(), other)) == {"primary_agent", "pentester", "searcher"}


def _post(url: str, token: str, **headers: str) -> tuple[int, dict[str, Any]]:
    body = json.dumps({"model": MODEL, "messages": _agent("pentester", "x"), "tools": TOOLS}).encode()
    request = urllib.request.Request(url, data=body, method="POST", headers={
        "Authorization": f"Bearer {token}", "Content-Type": "application/json", **headers})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


@pytest.mark.parametrize("session", ["s" * 10_000, "run\x01one", "bell\x07"])
def test_a_session_id_of_10_kb_or_with_control_characters_is_a_400_and_writes_nothing(
        gateway: Gateway, session: str) -> None:
    before = gateway.query("[Flow.objects.count(), Message.objects.count()]")
    status, payload = _post(gateway.v1 + "/chat/completions", gateway.token, **{"X-Session-Id": session})
    assert status == 400 and payload["error"]["code"] == "invalid_session_id", payload
    assert gateway.query("[Flow.objects.count(), Message.objects.count()]") == before


def test_a_url_session_with_control_characters_is_a_400(gateway: Gateway) -> None:
    status, payload = _post(gateway.base + "/s/bad%1Bsession/v1/chat/completions", gateway.token)
    assert status == 400 and payload["error"]["code"] == "invalid_session_id", payload
