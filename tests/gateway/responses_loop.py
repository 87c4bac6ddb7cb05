"""A function-calling agent on OpenAI's Responses API as users write it (the official `openai` client's
`responses.create`), in both state styles, and the scripted upstream that also writes the product's summaries."""
from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any

import openai

from summarizer import make_extractive
from tests.gateway.agent_loop import tool_output
from tests.gateway.upstream_responses import ResponsesUpstream

MODEL = "gpt-5"
TOOLS = [{"type": "function", "name": "run_command", "description": "Run a shell command on the attack box",
          "strict": False, "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}},
                                          "required": ["cmd"]}}]
INSTRUCTIONS = "You are a penetration tester. Use run_command for every step."
REASONING = {"reasoning": {"effort": "low", "summary": "auto"}, "include": ["reasoning.encrypted_content"]}


class SummarizingResponsesUpstream(ResponsesUpstream):
    """The Responses upstream, whose `/v1/chat/completions` also answers the product's own summarizer (a
    faithful extractive summary, so the identifier audit passes), as one provider serves both in practice."""

    def handle(self, handler: BaseHTTPRequestHandler, method: str, path: str, body: Any) -> None:
        if method == "POST" and path.split("?", 1)[0] == "/v1/chat/completions" and isinstance(body, dict):
            with self.lock:
                self.requests.pop()  # a summary request is not an agent call
            prompt = "\n".join(str(m.get("content") or "") for m in body.get("messages") or [])
            return self.send(handler, 200, {"id": "sum", "object": "chat.completion", "created": 0, "model": MODEL,
                                            "choices": [{"index": 0, "finish_reason": "stop", "message": {
                                                "role": "assistant", "content": make_extractive()(prompt)}}]})
        return super().handle(handler, method, path, body)

    def calls(self) -> list[dict[str, Any]]:
        """The agent calls the upstream received (`POST /v1/responses`)."""
        return [r for r in self.requests if r["path"].startswith("/v1/responses")]


def respond(client: openai.OpenAI, *, stream: bool, headers: dict[str, str] | None = None,
            **args: Any) -> tuple[Any, int]:
    """One `responses.create` (streamed through the SDK's stream helper or not): (response, X-Chain-Id)."""
    body = {"model": MODEL, "instructions": INSTRUCTIONS, "tools": TOOLS, **args}
    if not stream:
        raw = client.responses.with_raw_response.create(**body, extra_headers=headers or {})
        return raw.parse(), int(raw.headers["X-Chain-Id"])
    with client.responses.stream(**body, extra_headers=headers or {}) as events:
        chain_id = int(events._response.headers["X-Chain-Id"])  # noqa: SLF001 - the SDK keeps the raw response
        return events.get_final_response(), chain_id


def outputs_for(response: Any, turn: int) -> list[dict[str, Any]]:
    """The agent runs every function call and answers with its (bulky) output."""
    return [{"type": "function_call_output", "call_id": item.call_id,
             "output": tool_output(json.loads(item.arguments)["cmd"], turn)}
            for item in response.output if item.type == "function_call"]


def run_stateless(client: openai.OpenAI, *, turns: int, task: str, stream: bool,
                  headers: dict[str, str] | None = None) -> tuple[list[dict[str, Any]], list[int], list[Any]]:
    """Codex's style: `store: false`, the whole input every time, encrypted reasoning sent back as it came."""
    items: list[dict[str, Any]] = []
    chain_ids, responses = [], []
    for turn in range(turns):
        items.append({"role": "user", "content": f"{task}: step {turn}, scan the next port range"})
        while True:
            response, chain_id = respond(client, stream=stream, headers=headers, input=items, store=False,
                                         **REASONING)
            chain_ids.append(chain_id)
            responses.append(response)
            items += [item.model_dump(exclude_none=True) for item in response.output]
            follow = outputs_for(response, turn)
            if not follow:
                break
            items += follow
    return items, chain_ids, responses


def run_stateful(client: openai.OpenAI, *, turns: int, task: str, stream: bool,
                 headers: dict[str, str] | None = None) -> tuple[list[int], list[Any]]:
    """The Agents SDK's and `client.responses` users' style: only the new items, `previous_response_id`."""
    chain_ids, responses = [], []
    previous: Any = None
    for turn in range(turns):
        follow: list[dict[str, Any]] = [{"role": "user", "content": f"{task}: step {turn}, scan the next range"}]
        while follow:
            extra = {"previous_response_id": previous.id} if previous is not None else {}
            previous, chain_id = respond(client, stream=stream, headers=headers, input=follow, **extra)
            chain_ids.append(chain_id)
            responses.append(previous)
            follow = outputs_for(previous, turn)
    return chain_ids, responses
