"""Overflow recovery, errors passed through, upstream faults: an OpenAI error and nothing half-written."""
from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request
from typing import Any

import openai
import pytest

from tests.gateway.agent_loop import SYSTEM, TOOLS, tool_output
from tests.gateway.conftest import WINDOW_TOKENS, Gateway
from tests.gateway.upstream_fake import MODEL

pytestmark = pytest.mark.timeout(300)


def _client(gateway: Gateway, **kwargs: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=gateway.v1, api_key=gateway.token, max_retries=0, timeout=60, **kwargs)


def _messages(task: str, tool_rounds: int = 0) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": task}]
    for i in range(tool_rounds):
        messages.append({"role": "assistant", "content": None, "tool_calls": [{
            "id": f"c{i}", "type": "function", "function": {"name": "run_command", "arguments": "{}"}}]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": tool_output(f"scan {i}", i)})
        messages.append({"role": "user", "content": f"{task}: continue {i}"})
    return messages


def _last_call(gateway: Gateway, chain_id: int) -> dict[str, Any]:
    return gateway.query(f"GatewayCall.objects.filter(chain_id={chain_id}).values('status', 'attempts', "
                         "'http_status', 'response_seq', 'error', 'mode').last()")


def _raw_roles(gateway: Gateway, chain_id: int) -> list[str]:
    return [m["role"] for m in gateway.chain(chain_id)["raw"]]


def test_an_upstream_overflow_is_compacted_and_retried(gateway: Gateway) -> None:
    gateway.upstream.faults[:] = ["overflow"]
    seen = len(gateway.upstream.requests)
    raw = _client(gateway).chat.completions.with_raw_response.create(
        model=MODEL, messages=_messages("overflow once", tool_rounds=4), tools=TOOLS)
    assert raw.parse().choices[0].message.tool_calls
    chain_id = int(raw.headers["X-Chain-Id"])
    assert len(gateway.upstream.requests) - seen == 2
    call = _last_call(gateway, chain_id)
    assert call["attempts"] == 2 and call["status"] == "ok" and call["response_seq"]
    assert gateway.query(f"list(SummaryEvent.objects.filter(chain_id={chain_id}, trigger='overflow')"
                         ".values_list('outcome', flat=True))")


def test_observe_mode_recovers_a_real_overflow_with_the_compacted_view(gateway: Gateway) -> None:
    messages = _messages("observe overflow", tool_rounds=14)
    seen = len(gateway.upstream.requests)
    raw = _client(gateway).chat.completions.with_raw_response.create(
        model=MODEL, messages=messages, tools=TOOLS, extra_headers={"X-Gateway-Mode": "observe"})
    assert raw.http_response.status_code == 200
    first, *retries = gateway.upstream.requests[seen:]
    assert first["body"]["messages"] == messages  # observe sent the agent's own request first
    assert retries and len(retries[-1]["body"]["messages"]) < len(messages)


def test_after_at_most_three_retries_the_upstream_error_comes_back(gateway: Gateway) -> None:
    gateway.upstream.faults[:] = ["overflow"] * 5
    seen = len(gateway.upstream.requests)
    with pytest.raises(openai.BadRequestError) as caught:
        _client(gateway).chat.completions.create(model=MODEL, messages=_messages("overflow forever", 3),
                                                 tools=TOOLS)
    assert "maximum context length" in str(caught.value)
    chain_id = int(caught.value.response.headers["X-Chain-Id"])
    call = _last_call(gateway, chain_id)
    # a retry only goes out when the compaction shrank the request; never more than 3 of them
    assert 2 <= call["attempts"] == len(gateway.upstream.requests) - seen <= 4
    assert call["status"] == "upstream_error" and call["response_seq"] is None
    gateway.upstream.faults.clear()


def test_a_rate_limit_passes_through_without_compacting(gateway: Gateway) -> None:
    gateway.upstream.faults[:] = ["ratelimit"]
    seen = len(gateway.upstream.requests)
    with pytest.raises(openai.RateLimitError) as caught:
        _client(gateway).chat.completions.create(model=MODEL, messages=_messages("rate limited"), tools=TOOLS)
    assert caught.value.body["code"] == "rate_limit_exceeded"  # type: ignore[index]
    assert len(gateway.upstream.requests) - seen == 1
    chain_id = int(caught.value.response.headers["X-Chain-Id"])
    assert not gateway.query(f"SummaryEvent.objects.filter(chain_id={chain_id}, trigger='overflow').exists()")


@pytest.mark.parametrize("fault,status", [("garbage", 502), ("drop", 502)])
def test_a_broken_upstream_answer_is_an_error_and_no_answer_is_stored(gateway: Gateway, fault: str,
                                                                       status: int) -> None:
    gateway.upstream.faults[:] = [fault]
    with pytest.raises(openai.APIStatusError) as caught:
        _client(gateway).chat.completions.create(model=MODEL, messages=_messages(f"fault {fault}"), tools=TOOLS)
    assert caught.value.status_code == status
    assert caught.value.body["type"] == "server_error"  # type: ignore[index]
    chain_id = int(caught.value.response.headers["X-Chain-Id"])
    assert _raw_roles(gateway, chain_id) == ["system", "user"]
    assert _last_call(gateway, chain_id)["status"] == "failed"


def test_a_stream_closed_midway_ends_with_an_error_and_stores_no_answer(gateway: Gateway) -> None:
    gateway.upstream.faults[:] = ["midstream"]
    raw = _client(gateway).chat.completions.with_raw_response.create(
        model=MODEL, messages=_messages("cut stream"), tools=TOOLS, stream=True)
    chain_id = int(raw.headers["X-Chain-Id"])
    with pytest.raises(openai.APIError):
        for _chunk in raw.parse():
            pass
    assert _raw_roles(gateway, chain_id) == ["system", "user"]
    assert _last_call(gateway, chain_id)["status"] == "failed"


def _provider(gateway: Gateway, name: str, base_url: str, timeout: float) -> None:
    gateway.shell(f"from flows.models import ProviderConfig\nProviderConfig.objects.update_or_create(name={name!r}, "
                  f"defaults=dict(kind='openai', base_url={base_url!r}, timeout_seconds={timeout}))")


def test_an_unreachable_upstream_is_a_502(gateway: Gateway) -> None:
    from tests.fakes import free_port

    _provider(gateway, "deadend", f"http://127.0.0.1:{free_port()}/v1", 5)
    with pytest.raises(openai.APIStatusError) as caught:
        _client(gateway).chat.completions.create(model="deadend/x", messages=_messages("down"), tools=TOOLS)
    assert caught.value.status_code == 502
    assert caught.value.body["code"] == "upstream_unreachable"  # type: ignore[index]


def test_a_hanging_upstream_is_a_504_within_the_provider_timeout(gateway: Gateway) -> None:
    _provider(gateway, "slowpoke", gateway.upstream.url, 2)
    gateway.upstream.faults[:] = ["hang"]
    with pytest.raises(openai.APIStatusError) as caught:
        _client(gateway).chat.completions.create(model=f"slowpoke/{MODEL}", messages=_messages("hang"), tools=TOOLS)
    assert caught.value.status_code == 504
    chain_id = int(caught.value.response.headers["X-Chain-Id"])
    assert _raw_roles(gateway, chain_id) == ["system", "user"]


def _post(gateway: Gateway, body: bytes, token: str | None = None, **headers: str) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(gateway.v1 + "/chat/completions", data=body, method="POST", headers={
        "Authorization": f"Bearer {token or gateway.token}", "Content-Type": "application/json", **headers})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


@pytest.mark.parametrize("body,code", [
    (b"{not json", "invalid_json"),
    (b"[]", "invalid_json"),
    (json.dumps({"model": MODEL, "messages": []}).encode(), "invalid_messages"),
    (json.dumps({"messages": [{"role": "user", "content": "x"}]}).encode(), "invalid_model"),
    (json.dumps({"model": MODEL, "messages": [{"role": "user", "content": "x"},
                                              {"role": "tool", "tool_call_id": "nope", "content": "r"}]}).encode(),
     "orphan_tool_result"),
    (json.dumps({"model": MODEL, "messages": [{"role": "wizard", "content": "x"}]}).encode(), "invalid_message"),
])
def test_bad_requests_get_an_openai_error_and_write_nothing(gateway: Gateway, body: bytes, code: str) -> None:
    before = gateway.query("Message.objects.count()")
    status, payload = _post(gateway, body)
    assert status == 400 and payload["error"]["code"] == code, payload
    assert set(payload["error"]) >= {"message", "type", "code"}
    assert gateway.query("Message.objects.count()") == before


def test_a_wrong_token_is_a_401(gateway: Gateway) -> None:
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=gateway.v1, api_key="pgw_wrong", max_retries=0).chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "hi"}])


def test_another_users_chain_is_a_404(gateway: Gateway) -> None:
    raw = _client(gateway).chat.completions.with_raw_response.create(model=MODEL, messages=_messages("mine"),
                                                                     tools=TOOLS)
    mine = raw.headers["X-Chain-Id"]
    out = gateway.shell("from django.contrib.auth.models import User\nfrom flows.ingest import api_token_create\n"
                        "u, _ = User.objects.get_or_create(username='intruder')\n"
                        "print('TOKEN', api_token_create(user=u)[1])")
    other = next(x for x in out.splitlines() if x.startswith("TOKEN "))[6:]
    status, payload = _post(gateway, json.dumps({"model": MODEL, "messages": _messages("theirs")}).encode(),
                            token=other, **{"X-Chain-Id": mine})
    assert status == 404 and payload["error"]["code"] == "chain_not_found"
    assert WINDOW_TOKENS  # the fixture's window is what the fake enforces


def test_an_agent_that_hangs_up_cancels_the_upstream_call_and_the_call_is_recorded_cancelled(
        gateway: Gateway) -> None:
    gateway.upstream.faults[:] = ["hang_until_closed"]
    asked = len(gateway.upstream.requests)
    body = json.dumps({"model": MODEL, "messages": _messages("hang up"), "tools": TOOLS}).encode()
    with socket.create_connection(("127.0.0.1", gateway.port), timeout=10) as agent:
        agent.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\n"
                      + f"Authorization: Bearer {gateway.token}\r\nContent-Length: {len(body)}\r\n\r\n".encode()
                      + body)
        deadline = time.monotonic() + 10
        while len(gateway.upstream.requests) == asked and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(gateway.upstream.requests) == asked + 1  # the call is upstream; now the agent goes away
    assert gateway.upstream.gave_up.wait(10)  # the gateway closed its upstream request too
    chain_id = gateway.query("Chain.objects.filter(agent__flow__title='hang up').values_list('pk', flat=True)"
                             ".get()")
    call = _last_call(gateway, chain_id)
    assert (call["status"], call["http_status"]) == ("cancelled", 499)
    assert _raw_roles(gateway, chain_id) == ["system", "user"]  # no answer, nothing half-written
