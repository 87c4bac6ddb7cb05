"""Tokens of a whole Anthropic Messages or OpenAI Responses request: what the fit must make room for.

The request is converted to our messages (summarizer.formats.anthropic / .responses) and counted with the
engine's tiktoken counter: the system prompt, every message (with the reasoning text and, as JSON, every block
or item that has no counterpart in our format: documents, server-tool results, built-in tool calls), the tool
schemas, and the output the request reserves (`max_tokens` / `max_output_tokens`). Both tool shapes, Anthropic's
`input_schema` and the Responses API's flat function tools, are counted as the Chat Completions function
schema, so the same tools cost the same on every endpoint; built-in tools count as their JSON. Thinking blocks
of earlier turns are counted although Anthropic may drop them: over-counting compacts a little early, under-
counting overflows. Anything but an OpenAI model is an estimate (`estimate`).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from summarizer.formats.anthropic import anthropic_to_messages
from summarizer.formats.anthropic_blocks import THINKING_TYPES, block_part
from summarizer.formats.common import FormatError
from summarizer.formats.responses import responses_to_messages
from summarizer.formats.responses_items import item_kind, part_of
from summarizer.formats.wire import extension
from summarizer.tokens.count import REPLY_PRIMING_TOKENS, is_estimate, message_tokens, text_tokens, tools_tokens

__all__ = ["RequestTokens", "request_tokens", "WIRE_FORMATS"]

WIRE_FORMATS = ("anthropic", "responses")
MAPPED_BLOCKS = ("tool_use", "tool_result", *THINKING_TYPES)  # counted through our message's fields
MAPPED_ITEMS = ("message", "reasoning", "function_call", "custom_tool_call", "function_call_output",
                "custom_tool_call_output")


@dataclass(frozen=True)
class RequestTokens:
    """A request's token breakdown; `prompt` is what the provider counts as input, `total` adds the output."""

    system: int
    messages: int
    tools: int
    max_output: int
    estimate: bool

    @property
    def prompt(self) -> int:
        return self.system + self.messages + self.tools

    @property
    def total(self) -> int:
        return self.prompt + self.max_output


def request_tokens(body: dict[str, Any], wire: str, *, model: str | None = None) -> RequestTokens:
    """The breakdown of one request body in `wire` ("anthropic" or "responses"); FormatError when invalid."""
    if wire not in WIRE_FORMATS:
        raise FormatError(f"unknown wire format {wire!r} (one of {', '.join(WIRE_FORMATS)})")
    model = model if model is not None else str(body.get("model") or "") or None
    messages = anthropic_to_messages(body) if wire == "anthropic" else responses_to_messages(body)
    system = sum(message_tokens(m, model=model) for m in messages if m["role"] == "system")
    rest = sum(message_tokens(m, model=model) + _beside(m, wire, model) for m in messages if m["role"] != "system")
    output = body.get("max_tokens" if wire == "anthropic" else "max_output_tokens")
    return RequestTokens(system=system, messages=rest + REPLY_PRIMING_TOKENS,
                         tools=tools_tokens(_function_schemas(body.get("tools")), model=model),
                         max_output=output if isinstance(output, int) and output > 0 else 0,
                         estimate=is_estimate(model))


def _beside(msg: dict[str, Any], wire: str, model: str | None) -> int:
    """What our counter does not see of a message: its reasoning text and the blocks without a counterpart."""
    reasoning = msg.get("reasoning")
    total = text_tokens(reasoning["content"], model=model) if isinstance(reasoning, dict) and isinstance(
        reasoning.get("content"), str) else 0
    ext = extension(msg, wire)
    for block in ext.get("blocks" if wire == "anthropic" else "items") or []:
        total += sum(text_tokens(json.dumps(x, ensure_ascii=False), model=model) for x in _opaque(block, wire))
    return total


def _opaque(block: Any, wire: str) -> list[Any]:
    """The block itself when it has no counterpart, else its inner parts that have none."""
    if not isinstance(block, dict):
        return []
    if wire == "anthropic":
        if block.get("type") == "redacted_thinking" or (
                block_part(block) is None and block.get("type") not in MAPPED_BLOCKS):
            return [block]
        inner = block.get("content") if block.get("type") == "tool_result" else None
        return [b for b in inner if isinstance(b, dict) and block_part(b) is None] if isinstance(inner, list) else []
    if item_kind(block) not in MAPPED_ITEMS:
        return [block]
    inner = block.get("content", block.get("output"))
    return [p for p in inner if part_of(p) is None] if isinstance(inner, list) else []


def _function_schemas(tools: Any) -> list[Any]:
    """Tools in the Chat Completions function shape where they are functions; built-in tools as they are."""
    out: list[Any] = []
    for tool in tools if isinstance(tools, list) else []:
        if isinstance(tool, dict) and ("input_schema" in tool or tool.get("type") == "function"):
            fn = {k: tool[k] for k in ("name", "description") if k in tool}
            fn["parameters"] = tool.get("input_schema", tool.get("parameters"))
            out.append({"type": "function", "function": fn})
        else:
            out.append(tool)
    return out
