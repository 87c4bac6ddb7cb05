"""A fitted view rebuilt as an Anthropic Messages body, under Anthropic's rules.

- Signed thinking goes back unmodified: a thinking block reaches the upstream only when the agent's own request
  carries it verbatim (text and signature); a block the engine rebuilt (a summarized turn's placeholder
  signature, changed text) would be refused, and Anthropic drops earlier turns' thinking anyway. The open tool
  round is never folded by the engine, so its thinking always goes back as the agent sent it.
- Tool pairs stay whole: the engine never separates a call from its result (compaction.md §0.2); the view is
  rendered in two parts, what the gateway made (system + summary) and the agent's own newest messages
  unchanged, so no regrouping can move a `tool_result` away from its `tool_use` turn.
- Prompt caching keeps hitting between compactions: when the agent uses `cache_control`, a breakpoint ends the
  stable prefix (system + summary), which stays byte-identical until the next compaction; Anthropic allows 4
  breakpoints, so the agent's earliest message breakpoint gives way when they are all taken.
"""
from __future__ import annotations

import json
from typing import Any

from flows.engine import messages_to_anthropic
from flows.gateway.prefixes import message_digest
from flows.gateway.wire import WireRequest

__all__ = ["MAX_BREAKPOINTS", "anthropic_view_body", "agent_tail_length"]

Msg = dict[str, Any]
Block = dict[str, Any]
MAX_BREAKPOINTS = 4  # Anthropic's limit of cache_control blocks per request
THINKING = ("thinking", "redacted_thinking")
EPHEMERAL = {"type": "ephemeral"}


def agent_tail_length(view: list[Msg], history: list[Msg]) -> int:
    """How many of the view's last messages are the agent's own last messages, unchanged (the system
    message, first, is never counted: it is part of the stable prefix)."""
    limit = len(view) - (1 if view and view[0].get("role") == "system" else 0)
    count = 0
    while count < min(limit, len(history)) and message_digest(view[-1 - count]) == message_digest(
            history[-1 - count]):
        count += 1
    return count


def anthropic_view_body(request: WireRequest, model: str, view: list[Msg]) -> dict[str, Any]:
    """The agent's body with `view` as its system and messages, the rules above applied."""
    tail = agent_tail_length(view, request.messages)
    made = messages_to_anthropic(view[:len(view) - tail])
    turns: list[dict[str, Any]] = list(made["messages"])
    if tail:
        turns += messages_to_anthropic(view[len(view) - tail:])["messages"]
    body = {k: v for k, v in request.body.items() if k not in ("system", "messages")}
    body["model"] = model
    if "system" in made:
        body["system"] = made["system"]
    body["messages"] = [_without_foreign_thinking(turn, _signed_blocks(request.body)) for turn in turns]
    if made["messages"] and _uses_caching(request.body):
        _mark_prefix_end(body, len(made["messages"]) - 1)
    return body


def _key(block: Block) -> str:
    return json.dumps(block, sort_keys=True, ensure_ascii=False)


def _blocks(content: Any) -> list[Any]:
    return content if isinstance(content, list) else []


def _signed_blocks(body: dict[str, Any]) -> set[str]:
    """The thinking blocks the agent's request carries, as they came."""
    return {_key(b) for turn in body.get("messages") or [] if isinstance(turn, dict)
            for b in _blocks(turn.get("content")) if isinstance(b, dict) and b.get("type") in THINKING}


def _without_foreign_thinking(turn: dict[str, Any], signed: set[str]) -> dict[str, Any]:
    content = turn.get("content")
    if turn.get("role") != "assistant" or not isinstance(content, list):
        return turn
    kept = [b for b in content if not (isinstance(b, dict) and b.get("type") in THINKING and _key(b) not in signed)]
    if len(kept) == len(content):
        return turn
    return {**turn, "content": kept or [{"type": "text", "text": "(reasoning omitted)"}]}


def _uses_caching(body: dict[str, Any]) -> bool:
    return "cache_control" in json.dumps(
        [body.get("cache_control"), body.get("system"), body.get("tools"), body.get("messages")])


def _marked(blocks: list[Any]) -> list[Block]:
    return [b for b in blocks if isinstance(b, dict) and "cache_control" in b]


def _mark_prefix_end(body: dict[str, Any], turn_index: int) -> None:
    """A breakpoint on the last block of turn `turn_index` (the summary's end), within Anthropic's limit.
    Turns are replaced, never changed in place: their blocks may be the stored messages' own."""
    turns = body["messages"]
    message_marks = [(i, j) for i, turn in enumerate(turns) for j, b in enumerate(_blocks(turn.get("content")))
                     if isinstance(b, dict) and "cache_control" in b]
    taken = len(_marked(_blocks(body.get("tools")))) + len(_marked(_blocks(body.get("system")))) + len(message_marks)
    content = turns[turn_index]["content"]
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    if not content or not isinstance(content[-1], dict) or "cache_control" in content[-1]:
        return
    if taken >= MAX_BREAKPOINTS:
        if not message_marks:
            return
        i, j = message_marks[0]
        blocks = list(turns[i]["content"])
        blocks[j] = {k: v for k, v in blocks[j].items() if k != "cache_control"}
        turns[i] = {**turns[i], "content": blocks}
        if i == turn_index:
            content = blocks
    marked = {**content[-1], "cache_control": dict(EPHEMERAL)}
    turns[turn_index] = {**turns[turn_index], "content": [*content[:-1], marked]}
