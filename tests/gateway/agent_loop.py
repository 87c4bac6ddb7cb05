"""A tool-using agent as users write them: the official openai client, full history resent on every call."""
from __future__ import annotations

import json
from typing import Any

import openai

from tests.gateway.upstream_fake import MODEL

TOOLS = [{"type": "function", "function": {
    "name": "run_command", "description": "Run a shell command on the attack box",
    "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]}}}]
SYSTEM = "You are a penetration tester. Use run_command for every step."
TOOL_OUTPUT_LINES = 40


def tool_output(cmd: str, turn: int) -> str:
    """A realistically bulky tool result, so 20 turns overflow a small window and compaction has work."""
    rows = [f"{1000 + turn * 50 + i}/tcp open  service-{i} banner v{turn}.{i} host 10.10.5.23" for i in
            range(TOOL_OUTPUT_LINES)]
    return f"$ {cmd}\n" + "\n".join(rows)


def tool_pairs_valid(messages: list[dict[str, Any]]) -> bool:
    """Every tool result answers a call of the assistant message right before its run of results, and every
    call is answered before the next non-tool message."""
    pending: set[str] = set()
    for message in messages:
        if message["role"] == "tool":
            if message.get("tool_call_id") not in pending:
                return False
            pending.discard(message["tool_call_id"])
        else:
            if pending:
                return False
            pending = {c["id"] for c in message.get("tool_calls") or []}
    return True


def pairing(messages: list[dict[str, Any]]) -> list[tuple[str, str | None, list[str]]]:
    """Roles and call ids, to see a broken pairing in a failure message."""
    return [(m["role"], m.get("tool_call_id"), [c["id"] for c in m.get("tool_calls") or []]) for m in messages]


def _assistant_dict(message: Any) -> dict[str, Any]:
    return message.model_dump(exclude_none=True) if hasattr(message, "model_dump") else message


def run_agent(client: openai.OpenAI, *, turns: int, task: str, stream: bool = False,
              headers: dict[str, str] | None = None, tools: list[dict[str, Any]] | None = None,
              extra: dict[str, Any] | None = None) -> tuple[list[dict[str, Any]], list[int]]:
    """Run `turns` user requests, each answered by one tool round and a final answer; (history, chain ids).

    `tools` replaces the one-tool TOOLS; `extra` are more request fields (`max_tokens`, `response_format`)."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}]
    chain_ids: list[int] = []
    for turn in range(turns):
        messages.append({"role": "user", "content": f"{task}: step {turn}, scan the next port range"})
        while True:
            message, chain_id = _call(client, messages, stream=stream, headers=headers or {},
                                      fields={"tools": tools or TOOLS, **(extra or {})})
            chain_ids.append(chain_id)
            messages.append(message)
            if not message.get("tool_calls"):
                break
            for call in message["tool_calls"]:
                cmd = json.loads(call["function"]["arguments"])["cmd"]
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": tool_output(cmd, turn)})
    return messages, chain_ids


def _call(client: openai.OpenAI, messages: list[dict[str, Any]], *, stream: bool,
          headers: dict[str, str], fields: dict[str, Any]) -> tuple[dict[str, Any], int]:
    if not stream:
        raw = client.chat.completions.with_raw_response.create(model=MODEL, messages=messages,  # type: ignore
                                                                extra_headers=headers, **fields)
        return _assistant_dict(raw.parse().choices[0].message), int(raw.headers["X-Chain-Id"])
    raw = client.chat.completions.with_raw_response.create(model=MODEL, messages=messages,  # type: ignore
                                                            stream=True, extra_headers=headers, **fields)
    text: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    for chunk in raw.parse():
        for choice in chunk.choices:
            if choice.delta.content:
                text.append(choice.delta.content)
            for part in choice.delta.tool_calls or []:
                slot = calls.setdefault(part.index, {"id": "", "type": "function",
                                                     "function": {"name": "", "arguments": ""}})
                slot["id"] = part.id or slot["id"]
                if part.function is not None:
                    slot["function"]["name"] += part.function.name or ""
                    slot["function"]["arguments"] += part.function.arguments or ""
    message: dict[str, Any] = {"role": "assistant", "content": "".join(text) or None}
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    return message, int(raw.headers["X-Chain-Id"])
