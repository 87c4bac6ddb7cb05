"""The Anthropic stand the gateway's Anthropic tests share: `manage.py run` with the scripted Anthropic upstream
(tests/gateway/upstream_anthropic.py) as PentAGI's ANTHROPIC_SERVER_URL, and what its tests send through it with
the official `anthropic` SDK (a tool loop turn, a raw POST, a history of tool rounds, a call's record)."""
from __future__ import annotations

import contextlib
import http.client
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic

from tests.fakes import free_port
from tests.flows.pipeline_live import PYTHON, Stack, api, wait_http
from tests.gateway.settle import wait_calls_closed
from tests.gateway.upstream_anthropic import AnthropicUpstream
from tests.gateway.upstream_fake import MODEL as SUMMARY_MODEL
from tests.gateway.upstream_fake import FakeUpstream

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
        wait_calls_closed(self.query, chain_id)
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


def create(client: anthropic.Anthropic, messages: list[Any], *, stream: bool, **extra: Any) -> Any:
    args = {"model": MODEL, "max_tokens": 1024, "system": SYSTEM, "tools": TOOLS, "thinking": THINKING,
            "messages": messages, **extra}
    if not stream:
        return client.messages.with_raw_response.create(**args)
    with client.messages.with_streaming_response.create(stream=True, **args) as response:
        events = list(response.iter_lines())
        return response, events


def turn(client: anthropic.Anthropic, messages: list[Any], *, stream: bool) -> int:
    """One model call of a tool loop: the answer and a tool result appended; returns the chain id."""
    if stream:
        with client.messages.stream(model=MODEL, max_tokens=1024, system=SYSTEM, tools=TOOLS,  # type: ignore
                                    thinking=THINKING, messages=messages) as events:  # type: ignore
            answer = events.get_final_message()
            chain_id = int(events.response.headers["X-Chain-Id"])
    else:
        raw = create(client, messages, stream=False)
        answer, chain_id = raw.parse(), int(raw.headers["X-Chain-Id"])
    messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in answer.content]})
    calls = [b for b in answer.content if b.type == "tool_use"]
    if calls:
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": b.id, "content": f"$ {b.input['cmd']}\n{RESULT}"} for b in calls]})
    else:
        messages.append({"role": "user", "content": f"next host: 10.10.5.{len(messages)}"})
    return chain_id


def post(stand: Stand, path: str, raw: bytes, *, mode: str = "manage",
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


def tool_rounds(task: str, rounds: int, result: str = RESULT) -> list[Any]:
    """A history of `rounds` closed tool rounds after the task: text + tool_use, then its tool_result."""
    messages: list[Any] = [{"role": "user", "content": task}]
    for i in range(rounds):
        messages += [{"role": "assistant", "content": [
                         {"type": "text", "text": f"Scanning port range {i}."},
                         {"type": "tool_use", "id": f"toolu_r{i:02d}", "name": "terminal",
                          "input": {"cmd": f"nmap -p {i} 10.6.6.6"}}]},
                     {"role": "user", "content": [{"type": "tool_result", "content": result,
                                                   "tool_use_id": f"toolu_r{i:02d}"}]}]
    return messages


def observed_call(stand: Stand, messages: list[Any], *faults: str) -> tuple[Any, list[dict[str, Any]], int]:
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


def call_record(stand: Stand, chain_id: int) -> dict[str, Any]:
    stand.settled(chain_id)
    return stand.query(f"GatewayCall.objects.filter(chain_id={chain_id}).values('status', 'attempts', 'budget')"
                       ".order_by('-pk').first()")
