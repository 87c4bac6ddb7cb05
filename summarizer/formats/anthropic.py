"""Anthropic Messages requests and answers <-> our canonical messages, losslessly.

- `system` (a string or text blocks) is the first message, role system;
- an assistant turn is one assistant message: text blocks its content parts, `tool_use` blocks its tool calls,
  the thinking blocks its reasoning ({content, signature});
- a user turn is its `tool_result` blocks, one tool message each (in order), then one user message with the
  other blocks; a turn with only a string is a user message with that string.
Whatever has no counterpart is kept in the message's `"anthropic"` extension (summarizer.formats.wire):
`blocks` (the turn's original blocks, when the bare message would not give them back), `at` (the blocks'
places in their turn when tool results and other blocks were interleaved), `new_turn` (a tool or user message
that started a turn of its own instead of joining the tool results before it), `role: "system"` (a system
turn of `messages`, not the top-level `system`: our system message when it opens the chain, else a user
message, since a chain holds one system message, first) and `fields` (other keys of the turn). So
`messages_to_anthropic(anthropic_to_messages(r)) == {"system": ..., "messages": ...}` of r exactly, thinking
blocks and their signatures included. Invalid input (a `tool_result` for a call never issued, a thinking
block without its signature, a malformed known block) raises FormatError; unknown block types are kept.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from summarizer.formats.anthropic_blocks import (
    ANTHROPIC_BLOCK_TYPES,
    THINKING_TYPES,
    block_call,
    block_part,
    blocks_reasoning,
    call_block,
    check_block,
    content_blocks,
    part_block,
    reasoning_block,
    result_content,
)
from summarizer.formats.common import FormatError, _canonical, _require
from summarizer.formats.wire import Block, IssuedCalls, extension, merge_blocks, require_str, with_extension

__all__ = ["KEY", "anthropic_to_messages", "messages_to_anthropic", "anthropic_response_message",
           "anthropic_response_content", "looks_anthropic"]

KEY = "anthropic"
Message = dict[str, Any]
ROLES = ("user", "assistant", "system")


# ----------------------------------------------------------------------------------------------- import

def anthropic_to_messages(doc: Any, *, issued: Iterable[str] = (), follows: Message | None = None
                          ) -> list[Message]:
    """Our messages for an Anthropic request (or any object with its `system` and `messages`).

    Each turn converts on its own given what came before it: a continuation (the turns a resend adds) passes
    the call ids issued before (`issued`) and the last message before it (`follows`), and gets exactly the
    messages converting the whole request would give for those turns (error indexes count from its first)."""
    _require(isinstance(doc, dict) and isinstance(doc.get("messages"), list),
             "an Anthropic request needs a 'messages' list")
    out: list[Message] = []
    if doc.get("system") is not None:
        out.append(_system_message(doc["system"]))
    calls = IssuedCalls()
    for call_id in issued:
        calls.issue(call_id)
    for index, turn in enumerate(doc["messages"]):
        last = out[-1] if out else follows
        messages = _turn(turn, index, calls, first=last is None)
        if last is not None and last["role"] == "tool" and messages and messages[0]["role"] in ("tool", "user"):
            messages[0].setdefault(KEY, {})["new_turn"] = True  # it would join the results before it
        out.extend(messages)
    return out


def _attach(msg: Message, original: Any, render: Any, **ext: Any) -> Message:
    """`msg` with its original blocks kept only when rendering the bare message would not give them back."""
    if render(msg) != original:
        ext["blocks"] = original
    return with_extension(msg, KEY, ext)


def _system_message(system: Any) -> Message:
    if isinstance(system, str):
        return {"role": "system", "content": system}
    _require(isinstance(system, list), "'system' must be a string or a list of text blocks")
    blocks = [check_block(b, 0) for b in system]
    if any(b["type"] != "text" for b in blocks):
        raise FormatError("'system' may hold text blocks only")
    return _attach({"role": "system", "content": [block_part(b) for b in blocks]}, system, _system_out)


def _turn(turn: Any, index: int, issued: IssuedCalls, *, first: bool) -> list[Message]:
    _require(isinstance(turn, dict), f"expected an object, got {type(turn).__name__}", index=index)
    role, content = turn.get("role"), turn.get("content")
    if role not in ROLES:
        raise FormatError(f"role must be one of {', '.join(ROLES)}, got {role!r}", index=index)
    _require(isinstance(content, (str, list)), "'content' must be a string or a list of blocks", index=index)
    if role == "assistant":
        messages = [_assistant_message(content, index, issued)]
    elif role == "user":
        messages = _user_messages(content, index, issued)
    else:  # a system turn: our system message when it opens the chain, else read as user input
        blocks = content if isinstance(content, str) else [check_block(b, index) for b in content]
        msg = {"role": "system" if first else "user", "content": _parts(blocks)}
        messages = [_attach(msg, content, _user_out, role="system")]
    fields = {k: v for k, v in turn.items() if k not in ("role", "content")}
    if fields:
        messages[0].setdefault(KEY, {})["fields"] = fields
    return messages


def _parts(blocks: str | list[Block]) -> Any:
    return blocks if isinstance(blocks, str) else [p for p in map(block_part, blocks) if p is not None]


def _assistant_message(content: str | list[Any], index: int, issued: IssuedCalls) -> Message:
    if isinstance(content, str):
        return {"role": "assistant", "content": content}
    blocks = [check_block(b, index) for b in content]
    if any(b["type"] == "tool_result" for b in blocks):
        raise FormatError("a tool_result block belongs in a user turn", index=index)
    calls = [block_call(b) for b in blocks if b["type"] == "tool_use"]
    for call in calls:
        issued.issue(call["id"])
    msg = _canonical("assistant", _parts(blocks) or None, tool_calls=calls, reasoning=blocks_reasoning(blocks))
    return _attach(msg, content, _assistant_out)


def _tool_message(block: Block, index: int, issued: IssuedCalls) -> Message:
    call_id = require_str(block.get("tool_use_id"), "a tool_result's 'tool_use_id'", index, empty=False)
    issued.check(call_id, "tool_result for", index)
    _require(isinstance(block.get("is_error", False), bool), "a tool_result's 'is_error' must be a boolean",
             index=index)
    msg = _canonical("tool", result_content(block, index), tool_call_id=call_id)
    return _attach(msg, [block], lambda m: [_tool_out(m)])


def _user_messages(content: str | list[Any], index: int, issued: IssuedCalls) -> list[Message]:
    if isinstance(content, str):
        return [{"role": "user", "content": content}]
    blocks = [check_block(b, index) for b in content]
    if any(b["type"] == "tool_use" for b in blocks):
        raise FormatError("a tool_use block belongs in an assistant turn", index=index)
    results = [(pos, b) for pos, b in enumerate(blocks) if b["type"] == "tool_result"]
    rest = [(pos, b) for pos, b in enumerate(blocks) if b["type"] != "tool_result"]
    out = [_tool_message(b, index, issued) for _, b in results]
    places = [[pos] for pos, _ in results]
    if rest or not results:
        others = [b for _, b in rest]
        out.append(_attach({"role": "user", "content": _parts(others)}, others, _user_out))
        places.append([pos for pos, _ in rest])
    if len(out) > 1 and [p[0] for p in places[:len(results)]] != list(range(len(results))):
        for msg, at in zip(out, places, strict=True):  # interleaved: remember where each block stood
            msg.setdefault(KEY, {})["at"] = at
    return out


# ----------------------------------------------------------------------------------------------- export

def messages_to_anthropic(messages: list[Message]) -> dict[str, Any]:
    """`{"system"?, "messages"}` for our messages: the agent's exact blocks where the extension has them."""
    out: dict[str, Any] = {}
    rest = list(messages)
    if rest and rest[0]["role"] == "system" and not extension(rest[0], KEY).get("role"):
        out["system"] = _system_out(rest.pop(0))
    turns: list[dict[str, Any]] = []
    group: list[Message] = []  # an open user turn: tool messages, then at most one user message
    for msg in rest:
        ext = extension(msg, KEY)
        role = "system" if msg["role"] == "system" or ext.get("role") == "system" else msg["role"]
        joins = group and group[-1]["role"] == "tool" and not ext.get("new_turn")
        if role in ("tool", "user") and joins:
            group.append(msg)
            continue
        if group:
            turns.append(_user_turn(group))
            group = []
        if role in ("tool", "user"):
            group = [msg]
        else:
            render = _assistant_out if role == "assistant" else _user_out
            turns.append(_with_fields({"role": role, "content": render(msg)}, msg))
    if group:
        turns.append(_user_turn(group))
    out["messages"] = turns
    return out


def _with_fields(turn: dict[str, Any], first: Message) -> dict[str, Any]:
    fields = extension(first, KEY).get("fields")
    return {**turn, **fields} if isinstance(fields, dict) else turn


def _template(msg: Message) -> list[Block] | None:
    blocks = extension(msg, KEY).get("blocks")
    return blocks if isinstance(blocks, list) else None


def _system_out(msg: Message) -> Any:
    return _user_out(msg)


def _user_out(msg: Message) -> Any:
    template, content = _template(msg), msg.get("content")
    if template is not None:
        return merge_blocks(template, content_blocks(content), block_part, part_block)
    if isinstance(content, str):
        return content
    return [part_block(p) for p in content_blocks(content)]


def _result_out(content: Any) -> Any:
    return content if isinstance(content, str) else [part_block(p) for p in content_blocks(content)]


def _tool_out(msg: Message) -> Block:
    blocks, content, call_id = _template(msg), msg.get("content"), msg.get("tool_call_id", "")
    template = blocks[0] if blocks else None
    if not isinstance(template, dict):
        return {"type": "tool_result", "tool_use_id": call_id, "content": _result_out(content)}
    if template.get("tool_use_id") == call_id and result_content(template, -1) == content:
        return template
    old = template.get("content")
    new = (merge_blocks(old, content_blocks(content), block_part, part_block)
           if isinstance(old, list) and isinstance(content, list) else _result_out(content))
    return {**template, "tool_use_id": call_id, "content": new}


def _user_turn(group: list[Message]) -> dict[str, Any]:
    if len(group) == 1 and group[0]["role"] == "user":
        return _with_fields({"role": "user", "content": _user_out(group[0])}, group[0])
    pieces = [[_tool_out(m)] if m["role"] == "tool" else _as_list(_user_out(m)) for m in group]
    places = [extension(m, KEY).get("at") for m in group]
    blocks = [b for piece in pieces for b in piece]
    if all(isinstance(at, list) and len(at) == len(piece) for at, piece in zip(places, pieces, strict=True)):
        slots = {pos: b for at, piece in zip(places, pieces, strict=True)
                 for pos, b in zip(at or [], piece, strict=True)}
        if sorted(slots) == list(range(len(blocks))):
            blocks = [slots[pos] for pos in range(len(blocks))]
    return _with_fields({"role": "user", "content": blocks}, group[0])


def _as_list(content: Any) -> list[Block]:
    return content if isinstance(content, list) else [part_block(p) for p in content_blocks(content)]


def _assistant_out(msg: Message) -> Any:
    template, content = _template(msg), msg.get("content")
    calls, reasoning = list(msg.get("tool_calls") or []), msg.get("reasoning")
    thinking = reasoning_block(reasoning)
    if template is None:
        if isinstance(content, str) and not calls and thinking is None:
            return content
        head = [thinking] if thinking else []
        return head + [part_block(p) for p in content_blocks(content)] + [call_block(c) for c in calls]
    if reasoning == blocks_reasoning(template):  # the thinking blocks go back untouched, signatures and all
        head = []
    else:
        template = [b for b in template if b.get("type") not in THINKING_TYPES]
        head = [thinking] if thinking else []
    blocks = merge_blocks(template, content_blocks(content), block_part, part_block)
    blocks = merge_blocks(blocks, calls, _tool_use_call, call_block)
    return head + blocks


def _tool_use_call(block: Block) -> dict[str, Any] | None:
    return block_call(block) if block.get("type") == "tool_use" else None


# ----------------------------------------------------------------------------------------------- answers

def anthropic_response_message(message: Any) -> Message:
    """The assistant message an Anthropic answer (`{"content": [...], ...}`) stands for; metadata (id,
    model, stop_reason, usage) is the call's, not the message's."""
    _require(isinstance(message, dict) and isinstance(message.get("content"), list),
             "an Anthropic message needs a 'content' list")
    return _assistant_message(message["content"], 0, IssuedCalls())


def anthropic_response_content(msg: Message) -> list[Block]:
    """The content blocks of an Anthropic answer for one of our assistant messages."""
    return _as_list(_assistant_out(msg))


def looks_anthropic(doc: dict[str, Any]) -> bool:
    """A `{"messages": [...]}` document in Anthropic's format: a top-level system, or a block only it has."""
    if "system" in doc:
        return True
    for turn in doc.get("messages") or []:
        content = turn.get("content") if isinstance(turn, dict) else None
        if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") in ANTHROPIC_BLOCK_TYPES
                                             for b in content):
            return True
    return False
