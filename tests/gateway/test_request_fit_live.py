"""Manage mode fits the whole request, against a provider that counts messages + tools + max output.

`manage.py run` behind a scripted upstream (`CountingUpstream`) that counts like a self-hosted provider (its own
tokenizer skew, tool schemas as JSON in the prompt) and refuses a request whose prompt plus requested output
exceed its window, as OpenAI does.
"""
from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.fakes import free_port
from tests.flows.pipeline_live import PYTHON, Stack, api, wait_http
from tests.gateway.agent_loop import pairing, run_agent, tool_pairs_valid
from tests.gateway.tool_schemas import tool_schemas
from tests.gateway.upstream_counting import CountingUpstream
from tests.gateway.upstream_fake import MODEL

pytestmark = pytest.mark.timeout(300)

WINDOW_TOKENS = 16_000
MAX_TOKENS = 2_000


class Live:
    def __init__(self, stack: Stack, base: str, token: str, upstream: CountingUpstream) -> None:
        self.stack, self.base, self.token, self.upstream = stack, base, token, upstream

    def client(self) -> openai.OpenAI:
        return openai.OpenAI(base_url=self.base + "/v1", api_key=self.token, max_retries=0, timeout=60)

    def query(self, expression: str) -> Any:
        code = ("import json\nfrom flows.models import *\n"
                f"print('RESULT ' + json.dumps({expression}, default=str))")
        out = self.stack.manage("shell", "-c", code)
        return json.loads(next(x for x in out.splitlines() if x.startswith("RESULT "))[7:])

    def settled_events(self, chain_id: int) -> list[dict[str, Any]]:
        """The chain's events once no run is left running (the embedded worker may still be on one)."""
        expression = (f"list(SummaryEvent.objects.filter(chain__agent__flow_id=Chain.objects.get(pk={chain_id})"
                      ".agent.flow_id).values('trigger', 'outcome', 'calls', 'reason'))")
        deadline = time.monotonic() + 60
        while True:
            events = self.query(expression)
            if all(e["outcome"] != "running" for e in events) or time.monotonic() > deadline:
                return events
            time.sleep(0.2)

    def calls(self, chain_id: int) -> list[dict[str, Any]]:
        code = ("import json\nfrom flows.models import Chain, GatewayCall\nprint('RESULT ' + json.dumps(list("
                f"GatewayCall.objects.filter(chain__agent__flow_id=Chain.objects.get(pk={chain_id}).agent.flow_id)"
                ".order_by('pk').values('status', 'attempts', 'budget', 'http_status', 'error'))))")
        out = self.stack.manage("shell", "-c", code)
        return json.loads(next(x for x in out.splitlines() if x.startswith("RESULT "))[7:])


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    upstream = CountingUpstream(window_tokens=WINDOW_TOKENS)
    var_dir: Path = tmp_path_factory.mktemp("request-fit")
    stack = Stack.create(var_dir, LLM_SERVER_URL=upstream.url, LLM_SERVER_KEY="sk-up", LLM_SERVER_MODEL=MODEL,
                         LLM_SERVER_CONTEXT_TOKENS=str(WINDOW_TOKENS))
    try:
        creds = stack.provision()
        port = free_port()
        proc = stack.start("run", [PYTHON, "manage.py", "run", "--no-demo", "--port", str(port)])
        wait_http(f"http://127.0.0.1:{port}/accounts/login/", proc, stack.log("run"))
        yield Live(stack, f"http://127.0.0.1:{port}", creds["token"], upstream)
    finally:
        stack.close()
        upstream.close()


def test_a_20_turn_loop_with_20_tools_and_max_tokens_is_never_refused(live: Live) -> None:
    seen = len(live.upstream.requests)
    history, chain_ids = run_agent(live.client(), turns=20, task="fit-loop", tools=tool_schemas(),
                                   extra={"max_tokens": MAX_TOKENS}, headers={"X-Gateway-Mode": "manage"})
    assert live.upstream.refused == []  # not one request exceeded the provider's own count
    sent = live.upstream.requests[seen:]
    assert len(sent) == len(chain_ids)  # no overflow retries either: every first attempt fitted
    for request in sent:
        body = request["body"]
        assert tool_pairs_valid(body["messages"]), pairing(body["messages"])
        assert 256 <= body["max_tokens"] <= MAX_TOKENS
    assert len(set(chain_ids)) == 1
    assert live.upstream.prompt_tokens({"messages": history, "tools": tool_schemas()}) > WINDOW_TOKENS
    calls = live.calls(chain_ids[0])
    assert all(c["budget"]["window"] == WINDOW_TOKENS and c["budget"]["tools"] > 2_000 for c in calls)
    assert calls[-1]["budget"]["ratio"] > 1.2  # learned: the provider counts its tools as JSON


def test_manage_mode_calls_leave_only_events_that_changed_something(live: Live) -> None:
    _history, chain_ids = run_agent(live.client(), turns=4, task="quiet-loop", headers={"X-Gateway-Mode": "manage"})
    chain_id = chain_ids[0]
    events = live.settled_events(chain_id)
    assert [e for e in events if e["outcome"] == "skipped" and not e["calls"]] == []  # counted, not rows
    assert len(events) <= len(chain_ids)  # at most one run per call
    stats = api(live.base, "GET", f"/api/chains/{chain_id}", live.token)["stats"]
    assert stats["skipped_runs"] >= 1


def test_a_request_whose_tools_alone_exceed_the_window_gets_one_clear_error(live: Live) -> None:
    tools = tool_schemas() * 5  # 100 tools: more than the window by themselves
    for i, tool in enumerate(tools):
        tool["function"] = {**tool["function"], "name": f"{tool['function']['name']}_{i}"}
    seen = len(live.upstream.requests)
    with pytest.raises(openai.BadRequestError) as raised:
        live.client().chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}],
                                              tools=tools, max_tokens=1000,  # type: ignore[arg-type]
                                              extra_headers={"X-Gateway-Mode": "manage"})
    message = raised.value.body["message"]  # type: ignore[index]
    assert message.startswith("context too large: the request needs ")
    assert message.count("context too large") == 1
    assert f"the window of {MODEL} is {WINDOW_TOKENS:,} tokens" in message
    assert raised.value.body["code"] == "context_length_exceeded"  # type: ignore[index]
    assert len(live.upstream.requests) == seen  # never sent: it could not fit


@pytest.mark.parametrize("field, value", [("max_tokens", 0), ("max_tokens", -5), ("max_tokens", "many"),
                                          ("max_tokens", 10**9), ("max_completion_tokens", True),
                                          ("tools", {"not": "a list"}),
                                          ("tools", [{"type": "function", "function": {"name": "x y"}}]),
                                          ("tools", [{"type": "function", "function": {
                                              "name": "x", "parameters": {"type": "strange"}}}]),
                                          ("tools", [{"type": "function", "function": {
                                              "name": "x", "parameters": {"properties": []}}}]),
                                          ("response_format", "json")])
def test_bad_fit_fields_are_a_400_and_write_nothing(live: Live, field: str, value: Any) -> None:
    before = api(live.base, "GET", "/api/flows", live.token)
    with pytest.raises(openai.BadRequestError) as raised:
        live.client().chat.completions.create(model=MODEL, messages=[{"role": "user", "content": f"bad {field}"}],
                                              extra_body={field: value})
    assert field in raised.value.body["message"] or "tools" in raised.value.body["message"]  # type: ignore[index]
    assert api(live.base, "GET", "/api/flows", live.token) == before


def test_a_10_mb_tools_list_is_refused_before_anything_is_written(live: Live) -> None:
    before = api(live.base, "GET", "/api/flows", live.token)
    huge = [{"type": "function", "function": {"name": "t", "description": "x" * 10_000_000}}]
    with pytest.raises(openai.APIStatusError) as raised:
        live.client().chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "huge"}],
                                              tools=huge)  # type: ignore[arg-type]
    assert raised.value.status_code in (400, 413)
    assert api(live.base, "GET", "/api/flows", live.token) == before
