"""The official `anthropic` SDK through the gateway (`manage.py run`) to a scripted Anthropic upstream that
enforces the API's rules (window, signed thinking unchanged, tool pairs), in observe and manage mode."""
from __future__ import annotations

import contextlib
import copy
import http.client
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import pytest

from flows.engine import messages_to_anthropic, request_tokens
from tests.fakes import free_port
from tests.flows.pipeline_live import PYTHON, Stack, api, wait_http
from tests.gateway.upstream_anthropic import COUNT_MODEL, AnthropicUpstream
from tests.gateway.upstream_base import TRICKLE_SECONDS
from tests.gateway.upstream_fake import MODEL as SUMMARY_MODEL
from tests.gateway.upstream_fake import FakeUpstream

pytestmark = pytest.mark.timeout(600)

KEY = "sk-ant-upstream-secret"
MODEL = "claude-scripted-1"
WINDOW = 9000  # ours, for the fit; the upstream refuses over UPSTREAM_WINDOW with its own count
UPSTREAM_WINDOW = 12_000
SYSTEM = [{"type": "text", "text": "You are a penetration tester on an authorised engagement. " * 20,
           "cache_control": {"type": "ephemeral"}}]
TOOLS = [{"name": "terminal", "description": "run a shell command",
          "input_schema": {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]}}]
THINKING = {"type": "enabled", "budget_tokens": 1024}
RESULT = "PORT STATE SERVICE\n" + "".join(f"{p}/tcp open ssh OpenSSH 8.9p1 Ubuntu 3ubuntu0.{p}\n" for p in range(120))


class Stand:
    def __init__(self, stack: Stack, port: int, creds: dict[str, str], upstream: AnthropicUpstream) -> None:
        self.stack, self.upstream = stack, upstream
        self.token, self.session = creds["token"], creds["session"]  # an API token, a logged-in session id
        self.base = f"http://127.0.0.1:{port}"
        self.port = port

    def client(self, mode: str = "manage", **headers: str) -> anthropic.Anthropic:
        return anthropic.Anthropic(base_url=self.base, api_key=self.token, max_retries=0, timeout=60,
                                   default_headers={"X-Gateway-Mode": mode, **headers})

    def query(self, expression: str) -> Any:
        code = ("import json\nfrom flows.models import *\n"
                f"print('RESULT ' + json.dumps({expression}, default=str))")
        out = self.stack.manage("shell", "-c", code)
        return json.loads(next(x for x in out.splitlines() if x.startswith("RESULT "))[7:])

    def chain(self, chain_id: int) -> dict[str, Any]:
        return api(self.base, "GET", f"/api/chains/{chain_id}", self.token)

    def settled(self, chain_id: int) -> dict[str, Any]:
        """The chain once its calls are closed (their records, and answers, are written after the response)."""
        deadline = time.monotonic() + 30
        while self.query(f"GatewayCall.objects.filter(chain_id={chain_id}, finished_at=None).count()"):
            assert time.monotonic() < deadline, "a call record was never closed"
        return self.chain(chain_id)


@contextlib.contextmanager
def running_stand(var_dir: Path, **env: str) -> Iterator[Stand]:
    """`manage.py run` with the scripted Anthropic upstream as PentAGI's ANTHROPIC_SERVER_URL, `MODEL`'s window
    set to WINDOW, summaries from a fake OpenAI upstream; `env` adds the server's variables."""
    upstream = AnthropicUpstream(window_tokens=UPSTREAM_WINDOW, api_key=KEY)
    summaries = FakeUpstream(window_tokens=100_000)
    stack = Stack.create(var_dir, LLM_SERVER_URL=summaries.url, LLM_SERVER_KEY="sk-summaries",
                         LLM_SERVER_MODEL=SUMMARY_MODEL, ANTHROPIC_SERVER_URL=upstream.url + "/v1",
                         ANTHROPIC_API_KEY=KEY, **env)
    try:
        creds = stack.provision()
        stack.manage("shell", "-c", "from flows.models import ModelWindow\n"
                     f"ModelWindow.objects.create(model={MODEL!r}, context_window={WINDOW})")
        port = free_port()
        proc = stack.start("run", [PYTHON, "manage.py", "run", "--no-demo", "--port", str(port)])
        wait_http(f"http://127.0.0.1:{port}/accounts/login/", proc, stack.log("run"))
        yield Stand(stack, port, creds, upstream)
    finally:
        stack.close()
        upstream.close()
        summaries.close()


@pytest.fixture(scope="module")
def stand(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stand]:
    with running_stand(tmp_path_factory.mktemp("anthropic-gateway")) as running:
        yield running


def _create(client: anthropic.Anthropic, messages: list[Any], *, stream: bool, **extra: Any) -> Any:
    args = {"model": MODEL, "max_tokens": 1024, "system": SYSTEM, "tools": TOOLS, "thinking": THINKING,
            "messages": messages, **extra}
    if not stream:
        return client.messages.with_raw_response.create(**args)
    with client.messages.with_streaming_response.create(stream=True, **args) as response:
        events = list(response.iter_lines())
        return response, events


def _turn(client: anthropic.Anthropic, messages: list[Any], *, stream: bool) -> int:
    """One model call of a tool loop: the answer and a tool result appended; returns the chain id."""
    if stream:
        with client.messages.stream(model=MODEL, max_tokens=1024, system=SYSTEM, tools=TOOLS,  # type: ignore
                                    thinking=THINKING, messages=messages) as events:  # type: ignore
            answer = events.get_final_message()
            chain_id = int(events.response.headers["X-Chain-Id"])
    else:
        raw = _create(client, messages, stream=False)
        answer, chain_id = raw.parse(), int(raw.headers["X-Chain-Id"])
    messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in answer.content]})
    calls = [b for b in answer.content if b.type == "tool_use"]
    if calls:
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": b.id, "content": f"$ {b.input['cmd']}\n{RESULT}"} for b in calls]})
    else:
        messages.append({"role": "user", "content": f"next host: 10.10.5.{len(messages)}"})
    return chain_id


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_a_20_turn_tool_loop_with_thinking_stays_in_one_chain_and_every_request_keeps_the_rules(
        stand: Stand, stream: bool) -> None:
    client = stand.client("manage")
    seen = len(stand.upstream.requests)
    messages: list[Any] = [{"role": "user", "content": f"scan the 10.10.5.0/24 range ({stream})"}]
    chains = {_turn(client, messages, stream=stream) for _ in range(20)}
    assert len(chains) == 1
    sent = [r for r in stand.upstream.requests[seen:] if r["body"].get("tools")]
    assert len(sent) >= 20
    assert len(json.dumps(messages)) > 4 * UPSTREAM_WINDOW  # the history itself would not fit: compaction ran
    assert any(len(r["body"]["messages"]) < len(messages) - 1 for r in sent[-3:])
    assert all(r["headers"].get("x-api-key") == KEY and "anthropic-version" in r["headers"] for r in sent)
    stored = stand.settled(chains.pop())["raw"]
    assert len(stored) == len(messages)  # the system, then every message once but the last (not sent yet)


def test_observe_forwards_the_body_byte_for_byte_and_the_stored_chain_exports_the_blocks(stand: Stand) -> None:
    """Two calls of a tool round; the flow's export in the `anthropic` format (the API's download) gives back the
    system and every turn as the agent and the upstream wrote them: signed thinking, tool_use, a tool_result
    with block content and is_error, cache_control markers, the answer's text."""
    messages: list[Any] = [{"role": "user", "content": [{"type": "text", "text": "observe 10.1.1.1",
                                                         "cache_control": {"type": "ephemeral"}}]}]
    body = {"model": MODEL, "max_tokens": 512, "system": SYSTEM, "tools": TOOLS, "thinking": THINKING,
            "messages": messages, "metadata": {"user_id": "u-1"}, "x_vendor": {"kept": True}}
    for _call in range(2):
        raw = (json.dumps({**body, "messages": messages}, indent=3) + "\n").encode()
        status, headers, answer = _post(stand, "/v1/messages", raw, mode="observe")
        assert status == 200 and stand.upstream.requests[-1]["raw"] == raw
        reply = json.loads(answer)
        assert reply["content"][0]["type"] == "thinking" and reply["content"][0]["signature"]
        messages.append({"role": "assistant", "content": reply["content"]})
        if reply["content"][-1]["type"] == "tool_use":
            messages.append({"role": "user", "content": [{
                "type": "tool_result", "tool_use_id": reply["content"][-1]["id"], "is_error": True,
                "content": [{"type": "text", "text": "nmap: host <10.1.1.1> seems down"}]}]})
    chain_id = int(headers["X-Chain-Id"])
    stand.settled(chain_id)
    exported = api(stand.base, "GET", f"/api/flows/{headers['X-Flow-Id']}/export?format=anthropic&chain={chain_id}",
                   stand.token)
    assert exported == {"system": SYSTEM, "messages": messages}
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant"]


def test_an_unknown_block_type_reaches_the_upstream_verbatim_and_is_stored_verbatim_in_manage_mode(
        stand: Stand) -> None:
    unknown = {"type": "hologram_2031", "payload": {"z": [1, 2]}, "cache_control": {"type": "ephemeral"}}
    messages: list[Any] = [{"role": "user", "content": [unknown, {"type": "text", "text": "what is on 10.8.8.8?"}]}]
    raw = stand.client("manage").messages.with_raw_response.create(model=MODEL, max_tokens=256, system=SYSTEM,
                                                                    messages=messages)  # type: ignore[arg-type]
    reply = raw.parse()
    assert stand.upstream.requests[-1]["body"]["messages"][0] == messages[0]
    stored = stand.settled(int(raw.headers["X-Chain-Id"]))["raw"]
    assert messages_to_anthropic(stored)["messages"] == [
        *messages, {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in reply.content]}]


def _post(stand: Stand, path: str, raw: bytes, *, mode: str = "manage",
          **headers: str) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", stand.port, timeout=60)
    conn.request("POST", path, body=raw, headers={"x-api-key": stand.token, "Content-Type": "application/json",
                                                  "anthropic-version": "2023-06-01", "X-Gateway-Mode": mode,
                                                  **headers})
    response = conn.getresponse()
    try:
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("fault,status,kind", [("overloaded", 529, "overloaded_error"),
                                               ("ratelimit", 429, "rate_limit_error")])
def test_overloaded_and_rate_limits_pass_through_and_never_compact(stand: Stand, fault: str, status: int,
                                                                   kind: str, stream: bool) -> None:
    """Even with a history that a compaction could shrink: compacting cannot fix them."""
    stand.upstream.faults.append(fault)
    before = len(stand.upstream.requests)
    messages = _tool_rounds(f"{fault} {stream} on 10.2.2.2", 4, RESULT[:1500])
    with pytest.raises(anthropic.APIStatusError) as caught:
        stand.client("manage").messages.create(model=MODEL, max_tokens=256, system=SYSTEM, tools=TOOLS,
                                               messages=messages, stream=stream)  # type: ignore
    assert caught.value.status_code == status and caught.value.body["error"]["type"] == kind  # type: ignore
    assert len(stand.upstream.requests) == before + 1  # no compaction, no retry
    chain_id = int(caught.value.response.headers["X-Chain-Id"])
    call = _call_record(stand, chain_id)
    assert call["status"] == "failed" and call["attempts"] == 1
    assert not stand.query(f"SummaryEvent.objects.filter(chain_id={chain_id}, trigger='overflow').exists()")


def test_an_overloaded_error_event_mid_stream_reaches_the_agent_and_is_not_compacted(stand: Stand) -> None:
    stand.upstream.faults.append("error_event")
    before = len(stand.upstream.requests)
    raw = json.dumps({"model": MODEL, "max_tokens": 64, "stream": True, "system": "s",
                      "messages": [{"role": "user", "content": "overloaded mid-stream on 10.2.2.3"}]}).encode()
    status, headers, body = _post(stand, "/v1/messages", raw)
    events = body.strip().split(b"\n\n")
    assert status == 200 and events[0].startswith(b"event: message_start")
    assert [e for e in events if e.startswith(b"event: error")] == [events[-1]]  # the upstream's, once, last
    assert json.loads(events[-1].split(b"data: ", 1)[1])["error"]["type"] == "overloaded_error"
    assert len(stand.upstream.requests) == before + 1
    chain = stand.settled(int(headers["X-Chain-Id"]))
    assert [m["role"] for m in chain["raw"]] == ["system", "user"]  # no half answer appended
    assert _call_record(stand, chain["id"])["status"] == "failed"


@pytest.mark.parametrize("content,needle", [
    ([{"type": "tool_result", "tool_use_id": "toolu_never", "content": "x"}], "never issued"),
    ([{"type": "text", "text": "hi"}, {"type": "thinking", "thinking": "t"}], "thinking"),
])
def test_bad_blocks_are_an_anthropic_400_and_nothing_is_written(stand: Stand, content: Any, needle: str) -> None:
    flows = stand.query("Flow.objects.count()")
    turns = [{"role": "user", "content": "go"}, {"role": "assistant", "content": content}] \
        if needle == "thinking" else [{"role": "user", "content": content}]
    raw = json.dumps({"model": MODEL, "max_tokens": 64, "messages": turns}).encode()
    status, _headers, body = _post(stand, "/v1/messages", raw)
    error = json.loads(body)
    assert status == 400 and error["type"] == "error" and error["error"]["type"] == "invalid_request_error"
    assert needle in error["error"]["message"]
    assert stand.query("Flow.objects.count()") == flows


@pytest.mark.parametrize("fault", ["cut", "garbage"])
def test_a_broken_stream_ends_with_an_anthropic_error_event_and_nothing_is_appended(stand: Stand,
                                                                                     fault: str) -> None:
    stand.upstream.faults.append(fault)
    raw = json.dumps({"model": MODEL, "max_tokens": 64, "stream": True, "system": "s",
                      "messages": [{"role": "user", "content": f"broken {fault} 10.3.3.3"}]}).encode()
    status, headers, body = _post(stand, "/v1/messages", raw)
    assert status == 200 and body.rstrip().endswith(b"}")
    last = body.strip().split(b"\n\n")[-1]
    assert last.startswith(b"event: error\n") and json.loads(last.split(b"data: ", 1)[1])["type"] == "error"
    chain = stand.settled(int(headers["X-Chain-Id"]))
    assert [m["role"] for m in chain["raw"]] == ["system", "user"]
    call = stand.query(f"list(GatewayCall.objects.filter(chain_id={chain['id']}).values_list('status', flat=True))")
    assert call == ["failed"]
    error = stand.query(f"GatewayCall.objects.get(chain_id={chain['id']}).error")
    assert ("message_stop" if fault == "cut" else "message_start") in error


def test_count_tokens_forwards_to_the_upstream_endpoint(stand: Stand) -> None:
    counted = stand.client().messages.count_tokens(model=MODEL, system=SYSTEM, tools=TOOLS,  # type: ignore
                                                   messages=[{"role": "user", "content": "count me"}])
    asked = stand.upstream.requests[-1]
    assert asked["path"].startswith("/v1/messages/count_tokens") and counted.input_tokens > 100


def test_a_rewritten_history_continues_in_a_successor_chain_with_a_rewrite_event(stand: Stand) -> None:
    client = stand.client("observe")
    messages: list[Any] = [{"role": "user", "content": "rewrite test on 10.4.4.4"}]
    first = _turn(client, messages, stream=False)
    _turn(client, messages, stream=False)
    compacted = [messages[0], {"role": "assistant", "content": "Summary: 10.4.4.4 has 22/tcp open."},
                 {"role": "user", "content": "continue"}]
    second = _turn(client, copy.deepcopy(compacted), stream=False)
    assert second != first
    events = stand.query(f"list(SummaryEvent.objects.filter(chain_id={second}).values_list('trigger', flat=True))")
    assert "client-rewrite" in events


def _tool_rounds(task: str, rounds: int, result: str = RESULT) -> list[Any]:
    messages: list[Any] = [{"role": "user", "content": task}]
    for i in range(rounds):
        messages += [{"role": "assistant", "content": [
                         {"type": "text", "text": f"Scanning port range {i}."},
                         {"type": "tool_use", "id": f"toolu_r{i:02d}", "name": "terminal",
                          "input": {"cmd": f"nmap -p {i} 10.6.6.6"}}]},
                     {"role": "user", "content": [{"type": "tool_result", "content": result,
                                                   "tool_use_id": f"toolu_r{i:02d}"}]}]
    return messages


def _observed_call(stand: Stand, messages: list[Any], *faults: str) -> tuple[Any, list[dict[str, Any]], int]:
    """One observe-mode call with `faults` scripted: the answer, what reached the upstream, the chain id."""
    stand.upstream.faults[:] = list(faults)
    before = len(stand.upstream.requests)
    try:
        raw = stand.client("observe").messages.with_raw_response.create(
            model=MODEL, max_tokens=256, system=SYSTEM, tools=TOOLS, messages=messages)  # type: ignore
    finally:
        stand.upstream.faults.clear()
    sent = [r for r in stand.upstream.requests[before:] if r["body"].get("tools")]  # not the summary calls
    return raw, sent, int(raw.headers["X-Chain-Id"])


def _call_record(stand: Stand, chain_id: int) -> dict[str, Any]:
    stand.settled(chain_id)
    return stand.query(f"GatewayCall.objects.filter(chain_id={chain_id}).values('status', 'attempts', 'budget')"
                       ".order_by('-pk').first()")


def test_an_overflow_is_compacted_with_the_reported_count_and_retried(stand: Stand) -> None:
    messages = _tool_rounds("overflow test on 10.6.6.6", 14)
    raw, sent, chain_id = _observed_call(stand, messages)
    assert raw.parse().content
    assert len(sent) >= 2 and len(sent[-1]["body"]["messages"]) < len(messages)
    assert _call_record(stand, chain_id)["attempts"] >= 2


def test_a_413_request_too_large_is_compacted_and_retried_once(stand: Stand) -> None:
    messages = _tool_rounds("413 test on 10.6.6.7", 8, RESULT[:1500])  # fits: only the 413 refuses it
    raw, sent, chain_id = _observed_call(stand, messages, "too_large")
    assert raw.parse().content and len(sent) == 2
    assert sent[0]["body"]["messages"] == messages  # the agent's own history first (observe)
    assert len(json.dumps(sent[1]["body"]["messages"])) < len(json.dumps(sent[0]["body"]["messages"]))
    call = _call_record(stand, chain_id)
    assert call["status"] == "ok" and call["attempts"] == 2
    assert stand.query(f"SummaryEvent.objects.filter(chain_id={chain_id}, trigger='overflow').count()") >= 1


def test_the_count_a_prompt_is_too_long_error_quotes_is_what_the_retry_is_fitted_with(stand: Stand) -> None:
    """The upstream quotes twice the prompt it really counted: the retry is fitted with the provider/tiktoken
    ratio learned from that count (about twice the one learned from earlier answers), and fits."""
    learned = stand.query(f"TokenRatio.objects.filter(model={MODEL!r}).values_list('ratio', flat=True).first()")
    messages = _tool_rounds("too long test on 10.6.6.8", 8, RESULT[:1500])
    raw, sent, chain_id = _observed_call(stand, messages, "too_long")
    assert raw.parse().content and len(sent) == 2
    upstream_count = [request_tokens(r["body"], "anthropic", model=COUNT_MODEL).prompt for r in sent]
    assert upstream_count[0] > 0.6 * WINDOW > upstream_count[1]
    call = _call_record(stand, chain_id)
    assert call["attempts"] == 2 and call["budget"]["ratio"] >= 1.5 * (learned or 1.0)


def test_overflow_retries_stop_after_three_and_the_upstreams_413_comes_back(stand: Stand) -> None:
    messages = _tool_rounds("413 forever on 10.6.6.9", 14)
    before = len(stand.upstream.requests)
    with pytest.raises(anthropic.APIStatusError) as caught:
        _observed_call(stand, messages, *["too_large"] * 6)
    assert caught.value.status_code == 413
    assert caught.value.body["error"]["type"] == "request_too_large"  # type: ignore[index]
    tries = [r for r in stand.upstream.requests[before:] if r["body"].get("tools")]
    assert 2 <= len(tries) <= 4  # the first attempt and at most 3 retries (fewer when a compaction cannot shrink)


def test_a_client_that_hangs_up_mid_stream_cancels_the_upstream_call(stand: Stand) -> None:
    """The upstream holds its stream open with pings for half a minute; the SDK client reads the first event
    and closes: the upstream sees its own connection closed long before its stream would end."""
    stand.upstream.faults.append("trickle")
    ended = len(stand.upstream.stream_ends)
    with stand.client("observe").messages.with_streaming_response.create(
            model=MODEL, max_tokens=64, stream=True, system="s",
            messages=[{"role": "user", "content": "hang up on 10.7.7.7"}]) as response:
        chain_id = int(response.headers["X-Chain-Id"])
        assert next(response.iter_lines()).startswith("event: message_start")
    assert stand.upstream.wait_stream_end(ended, timeout=TRICKLE_SECONDS) == "closed"
    chain = stand.settled(chain_id)
    calls = stand.query(f"list(GatewayCall.objects.filter(chain_id={chain_id}).values('status', 'error'))")
    assert [c["status"] for c in calls] == ["cancelled"] and "hung up" in calls[0]["error"]
    assert [m["role"] for m in chain["raw"]] == ["system", "user"]  # no half answer appended
