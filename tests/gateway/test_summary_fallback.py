"""Issue 20 item 5: a summary model that answers garbage during a gateway call does not fail the agent's call
(`summary_fallback` offline: the offline summarizer stands in, and the event says so), and does in `fail` mode,
with one clear error. The summary model is a real local HTTP server (the same scripted endpoint as the agent's
upstream: requests without tools are the product's own summary calls)."""
from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client

from flows.config import settings_save
from flows.ingest import api_token_create
from flows.models import GatewayCall, ModelWindow, ProviderConfig, ProviderKind, SummaryEvent
from flows.pipeline.llm import clear_summary_caches
from tests.gateway.agent_loop import SYSTEM, TOOLS, tool_output
from tests.gateway.upstream_fake import MODEL, FakeUpstream

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]

WINDOW_TOKENS = 6000
ROUNDS = 14  # tool rounds: ~8k tokens of history, more than the window


class GarbageSummaries(FakeUpstream):
    """The agent's upstream as usual; its summary calls answered with `garbage`."""

    def __init__(self, garbage: str) -> None:
        super().__init__(window_tokens=WINDOW_TOKENS)
        self.garbage, self.summary_calls = garbage, 0
        self.released = threading.Event()

    def _chat(self, handler: Any, raw: bytes) -> None:
        body = json.loads(raw)
        if "tools" in body:
            return super()._chat(handler, raw)
        with self.lock:
            self.summary_calls += 1
        if self.garbage == "timeout":  # longer than the provider's timeout; released at teardown
            self.released.wait(30)
            return None
        if self.garbage == "http500":
            return self._send(handler, 500, {"error": {"message": "summary backend exploded", "type": "server"}})
        message: dict[str, Any] = {"role": "assistant", "content": ""}
        if self.garbage == "tool_call":
            message = {"role": "assistant", "content": None, "tool_calls": [{
                "id": "c1", "type": "function", "function": {"name": "run_command", "arguments": "{}"}}]}
        finish = "tool_calls" if self.garbage == "tool_call" else "stop"
        return self._send(handler, 200, {"id": "s", "object": "chat.completion", "created": 0, "model": MODEL,
                                         "choices": [{"index": 0, "message": message, "finish_reason": finish}]})


GARBAGE = {"empty": "returned no text", "tool_call": "finish_reason: tool_calls", "http500": "HTTP 500",
           "timeout": "timed out"}


@pytest.fixture
def token(django_user_model: Any) -> str:
    user = django_user_model.objects.create_user("fallback-user", password="x")
    ModelWindow.objects.create(model=MODEL, context_window=WINDOW_TOKENS, max_output_tokens=500)
    clear_summary_caches()
    return api_token_create(user=user)[1]


@pytest.fixture
def upstream_for(token: str) -> Iterator[Any]:
    made: list[GarbageSummaries] = []

    def make(garbage: str, fallback: str) -> GarbageSummaries:
        upstream = GarbageSummaries(garbage)
        made.append(upstream)
        ProviderConfig.objects.create(name="scripted", kind=ProviderKind.OPENAI, base_url=upstream.url, model=MODEL,
                                      api_key="sk-x", is_default=True, timeout_seconds=3, max_attempts=1)
        settings_save(profile="agent", flow=None, data={"summary_fallback": fallback}, source="api")
        return upstream

    yield make
    for upstream in made:
        upstream.released.set()
        upstream.close()


def _history() -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM},
                                      {"role": "user", "content": "audit 10.10.5.23"}]
    for i in range(ROUNDS):
        messages.append({"role": "assistant", "content": None, "tool_calls": [{
            "id": f"call_{i}", "type": "function",
            "function": {"name": "run_command", "arguments": json.dumps({"cmd": f"nmap -p {i}"})}}]})
        messages.append({"role": "tool", "tool_call_id": f"call_{i}", "content": tool_output(f"nmap -p {i}", i)})
    messages.append({"role": "user", "content": "continue with the next host"})
    return messages


def _post(token: str, mode: str) -> Any:
    body = {"model": MODEL, "messages": _history(), "tools": TOOLS}
    return Client().post("/v1/chat/completions", json.dumps(body), content_type="application/json",
                         HTTP_AUTHORIZATION=f"Bearer {token}", HTTP_X_GATEWAY_MODE=mode)


def _reasons(response: Any) -> str:
    return "\n".join(SummaryEvent.objects.filter(chain_id=int(response["X-Chain-Id"])).values_list("reason", flat=True))


@pytest.mark.parametrize("mode", ["manage", "observe"], ids=["before-the-call", "overflow-recovery"])
@pytest.mark.parametrize("garbage", list(GARBAGE))
def test_a_garbage_summary_model_does_not_fail_the_call_and_the_event_says_who_stood_in(
        token: str, upstream_for: Any, garbage: str, mode: str) -> None:
    upstream = upstream_for(garbage, "offline")
    response = _post(token, mode)
    assert response.status_code == 200, response.content[:500]
    assert json.loads(response.content)["choices"][0]["message"]
    assert upstream.summary_calls >= 1  # the model was asked (and failed) before the offline summarizer stood in
    reasons = _reasons(response)
    assert "the offline summarizer stood in" in reasons, reasons
    assert GARBAGE[garbage] in reasons, reasons
    call = GatewayCall.objects.get(chain_id=int(response["X-Chain-Id"]))
    assert call.status == "ok" and call.attempts == (1 if mode == "manage" else 2)


@pytest.mark.parametrize("mode", ["manage", "observe"], ids=["before-the-call", "overflow-recovery"])
@pytest.mark.parametrize("garbage", ["http500", "tool_call"])
def test_in_fail_mode_the_agent_gets_one_clear_error(token: str, upstream_for: Any, garbage: str, mode: str) -> None:
    upstream_for(garbage, "fail")
    response = _post(token, mode)
    assert response.status_code == 400, response.content[:500]
    error = json.loads(response.content)["error"]
    assert error["code"] == "context_length_exceeded" and "context" in error["message"]
    if mode == "observe":  # the overflow's retry would be the same request: the error says why
        assert "compacting the chain to fit it failed" in error["message"], error["message"]
    else:
        assert "the summary model failed" in error["message"], error["message"]
    assert GARBAGE[garbage] in error["message"]
    assert "stood in" not in _reasons(response)
