"""The official openai client runs a 20-turn tool-using agent through the gateway (`manage.py run`)."""
from __future__ import annotations

import json
from typing import Any

import openai
import pytest

from pentagi_web.security import CONTENT_SECURITY_POLICY
from summarizer import count_tokens
from tests.gateway.agent_loop import TOOLS, pairing, run_agent, tool_pairs_valid
from tests.gateway.conftest import UPSTREAM_KEY, WINDOW_TOKENS, Gateway

pytestmark = pytest.mark.timeout(600)


def _client(gateway: Gateway) -> openai.OpenAI:
    return openai.OpenAI(base_url=gateway.v1, api_key=gateway.token, max_retries=0, timeout=60)


def _raw_messages(gateway: Gateway, chain_id: int) -> list[dict[str, Any]]:
    return [{k: m.get(k) for k in ("role", "content", "tool_calls", "tool_call_id")}
            for m in gateway.chain(chain_id)["raw"]]


def _normal(message: dict[str, Any]) -> dict[str, Any]:
    return {"role": message["role"], "content": message.get("content") or None,
            "tool_calls": message.get("tool_calls") or None, "tool_call_id": message.get("tool_call_id")}


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_a_20_turn_agent_stays_in_one_chain_and_every_request_fits(gateway: Gateway, stream: bool) -> None:
    seen = len(gateway.upstream.requests)
    history, chain_ids = run_agent(_client(gateway), turns=20, task=f"agent-loop-{stream}", stream=stream)

    assert len(set(chain_ids)) == 1, chain_ids
    sent = gateway.upstream.requests[seen:]
    assert len(sent) == len(chain_ids)  # no overflow retries were needed: manage mode fits before the call
    for request in sent:
        messages = request["body"]["messages"]
        assert count_tokens(messages, model="gpt-4o") <= WINDOW_TOKENS
        assert tool_pairs_valid(messages), pairing(messages)
        assert request["auth"] == f"Bearer {UPSTREAM_KEY}"  # the agent never sees the upstream key
    raw = _raw_messages(gateway, chain_ids[0])
    assert [_normal(m) for m in raw] == [_normal(m) for m in history]  # every message once, in order
    assert count_tokens(history, model="gpt-4o") > WINDOW_TOKENS  # the history itself did not fit


def test_observe_forwards_the_body_byte_for_byte(gateway: Gateway) -> None:
    body = {"model": "fake-model", "messages": [{"role": "system", "content": "observe me"},
                                                {"role": "user", "content": "  spaced   json  "}],
            "tools": [{"type": "function", "function": {"name": "run_command", "parameters": {}}}],
            "temperature": 0.3, "x_vendor_field": {"kept": True}}
    raw = (json.dumps(body, indent=3) + "\n").encode()
    import urllib.request

    request = urllib.request.Request(gateway.v1 + "/chat/completions", data=raw, method="POST", headers={
        "Authorization": f"Bearer {gateway.token}", "Content-Type": "application/json",
        "X-Gateway-Mode": "observe"})
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 200
        assert response.headers["X-Chain-Id"] and response.headers["X-Flow-Id"]
        # /v1/ runs without the page middleware under ASGI (flows/gateway/asgi.py): its own headers
        assert response.headers["X-Content-Type-Options"] == "nosniff"
        assert response.headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
        assert "Set-Cookie" not in response.headers
    assert gateway.upstream.requests[-1]["raw"] == raw


def test_a_developer_message_mid_conversation_is_kept_and_reaches_the_model(gateway: Gateway) -> None:
    messages = [{"role": "system", "content": "you test hosts"}, {"role": "user", "content": "scan 10.9.9.9"},
                {"role": "assistant", "content": "Scanning 10.9.9.9 now."},
                {"role": "developer", "content": "Report in JSON from now on."},
                {"role": "user", "content": "go on"}]
    client = openai.OpenAI(base_url=gateway.v1, api_key=gateway.token, max_retries=0, timeout=60)
    raw = client.chat.completions.with_raw_response.create(  # the fake tells agent calls by their tools
        model="fake-model", messages=messages, tools=TOOLS, extra_headers={"X-Gateway-Mode": "manage"})  # type: ignore
    sent = gateway.upstream.requests[-1]["body"]["messages"]
    assert "Report in JSON from now on." in json.dumps(sent)  # as user text: the view merges it with "go on"
    assert all("original_role" not in m for m in sent)
    chain_id = int(raw.headers["X-Chain-Id"])
    stored = gateway.chain(chain_id)["raw"]  # read once the answer, appended after the response, is in
    assert [m["role"] for m in stored] == ["system", "user", "assistant", "user", "user", "assistant"]
    assert stored[3]["original_role"] == "developer"
