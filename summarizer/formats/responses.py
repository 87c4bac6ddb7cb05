"""OpenAI Responses requests and answers <-> our canonical messages, losslessly.

- `instructions` is the first message, role system; a string `input` is one user message;
- a run of assistant-side items (reasoning, then assistant messages and `function_call` / `custom_tool_call`
  items; reasoning or a message after a message or call starts the next run) is one assistant message: the
  messages' text its content, the calls its tool calls, the reasoning items its
  reasoning ({content: the summary text, signature: the `encrypted_content`});
- a `function_call_output` / `custom_tool_call_output` is a tool message; user, system and developer
  messages are messages of their own (system and developer ones our system message when they open the chain,
  else user input: a chain holds one system message, first).
Items without a counterpart (built-in tool calls, item references, compaction, unknown types) join the
assistant run they stand in, else the message before them (else the one after). What the canonical message
cannot carry is kept in its `"responses"` extension: `items` (its original items, whenever the bare message
would not give them back; always for system and developer messages) and `input: "text"` (the request's
`input` was a plain string). So `messages_to_responses(responses_to_messages(r))` gives r's `instructions` and
`input` back exactly, `encrypted_content` byte for byte. A call output whose `call_id` was never issued
raises FormatError; unknown item types are kept.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from summarizer.formats.common import _canonical, _require
from summarizer.formats.responses_items import (
    CALL_TYPES,
    OUTPUT_TYPES,
    call_item,
    check_item,
    item_call,
    item_kind,
    item_parts,
    items_reasoning,
    message_item,
    output_content,
    output_out,
)
from summarizer.formats.wire import IssuedCalls, extension, merge_blocks, with_extension

__all__ = ["KEY", "responses_to_messages", "messages_to_responses", "responses_output_messages",
           "messages_to_responses_output", "looks_responses", "responses_resumable"]

KEY = "responses"
Message = dict[str, Any]
Item = dict[str, Any]
ASSISTANT_SIDE = ("reasoning", *CALL_TYPES)


def _assistant_side(item: Item) -> bool:
    kind = item_kind(item)
    return kind in ASSISTANT_SIDE or (kind == "message" and item.get("role") == "assistant")


def _starts_turn(item: Item, run: list[Item]) -> bool:
    """Reasoning or a message after the run's message begins the next assistant message, unless the run has
    calls: their outputs must follow the message that holds them."""
    kinds = {item_kind(i) for i in run}
    return item_kind(item) in ("reasoning", "message") and "message" in kinds and not kinds & set(CALL_TYPES)


def _mapped(item: Item) -> bool:
    return item_kind(item) in ("message", *ASSISTANT_SIDE, *OUTPUT_TYPES)


# ----------------------------------------------------------------------------------------------- import

def _units(items: list[Any], issued: IssuedCalls) -> list[list[Item]]:
    """The items grouped by the message each becomes (opaque items joined to their neighbour)."""
    units: list[list[Item]] = []
    pending: list[Item] = []
    open_run = False  # the last unit is an assistant run still taking items
    for index, raw in enumerate(items):
        item = check_item(raw, index, issued)
        if not _mapped(item):
            (units[-1] if units else pending).append(item)
            continue
        if _assistant_side(item) and open_run and not _starts_turn(item, units[-1]):
            units[-1].append(item)
            continue
        units.append([*pending, item])
        pending = []
        open_run = _assistant_side(item)
    if pending:
        units.append(pending)
    return units


def _unit_message(unit: list[Item], first: bool = True) -> Message:
    mapped = [i for i in unit if _mapped(i)]
    if not mapped or _assistant_side(mapped[0]):
        return _assistant_message(unit)
    item = mapped[0]
    if item_kind(item) in OUTPUT_TYPES:
        msg = _canonical("tool", output_content(item), tool_call_id=item["call_id"])
        return _keep(msg, unit, force=False)
    system = item["role"] in ("system", "developer")  # our system message when first, else user input
    role = ("system" if first else "user") if system else item["role"]
    return _keep({"role": role, "content": item_parts(item["content"])}, unit, force=system)


def _assistant_message(unit: list[Item]) -> Message:
    messages = [i for i in unit if item_kind(i) == "message"]
    if len(messages) == 1 and isinstance(messages[0]["content"], str):
        content: Any = messages[0]["content"]
    else:
        content = [p for m in messages for p in _as_parts(item_parts(m["content"]))] or None
    calls = [c for c in map(item_call, unit) if c is not None]
    return _keep(_canonical("assistant", content, tool_calls=calls, reasoning=items_reasoning(unit)), unit,
                 force=False)


def _as_parts(content: Any) -> list[dict[str, Any]]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def _keep(msg: Message, unit: list[Item], *, force: bool) -> Message:
    """`msg` with its original items kept when rendering the bare message would not give them back."""
    return with_extension(msg, KEY, {"items": unit} if force or _items_out(msg) != unit else {})


def responses_to_messages(doc: Any, *, issued: Iterable[str] = (), first: bool = True) -> list[Message]:
    """Our messages for a Responses request (`instructions` and `input`; a missing input is no message).

    A request that continues a stored conversation (`previous_response_id`) passes that conversation's call
    ids as `issued` (its outputs answer them) and `first=False` (its system or developer items are then user
    input, as they would be mid-conversation)."""
    _require(isinstance(doc, dict), "a Responses request is a JSON object")
    out: list[Message] = []
    if doc.get("instructions") is not None:
        _require(isinstance(doc["instructions"], str), "'instructions' must be a string")
        out.append({"role": "system", "content": doc["instructions"]})
    items = doc.get("input", [])
    if isinstance(items, str):
        return [*out, {"role": "user", "content": items, KEY: {"input": "text"}}]
    _require(isinstance(items, list), "'input' must be a string or a list of items")
    calls = IssuedCalls()
    for call_id in issued:
        calls.issue(call_id)
    return out + _messages(items, calls, first=first and not out)


def responses_resumable(items: list[Any], at: int) -> bool:
    """Whether the messages of `items[:at]` are final whatever follows: `items[at]` starts a message of its own
    (an item after it joins that message or a later one) and something before it made a message. Then
    `responses_to_messages` of all the items is that of `items[:at]` followed by that of `items[at:]` with the
    calls issued before and `first=False` (how a resend converts only what it adds). True when `items[at]` is
    user, system or developer input or a call output, or follows one; an item that may join the run before it
    (assistant-side, opaque) is False."""
    if not 0 < at < len(items) or not all(isinstance(i, dict) for i in (items[at - 1], items[at])):
        return False
    item, before = items[at], items[at - 1]
    if not _mapped(item):
        return False
    if not _assistant_side(item):
        return any(isinstance(i, dict) and _mapped(i) for i in items[:at])
    return _mapped(before) and not _assistant_side(before)


def responses_output_messages(items: Any) -> list[Message]:
    """Our messages for a list of items, e.g. a response's `output` (usually one assistant message)."""
    return _messages(items, IssuedCalls(), first=False)


def _messages(items: Any, issued: IssuedCalls, *, first: bool) -> list[Message]:
    _require(isinstance(items, list), "expected a list of items")
    return [_unit_message(unit, first=first and n == 0) for n, unit in enumerate(_units(items, issued))]


# ----------------------------------------------------------------------------------------------- export

def messages_to_responses(messages: list[Message]) -> dict[str, Any]:
    """`{"instructions"?, "input"}` for our messages: the agent's exact items where the extension has them."""
    out: dict[str, Any] = {}
    rest = list(messages)
    if rest and rest[0]["role"] == "system" and not extension(rest[0], KEY) and isinstance(rest[0].get("content"), str):
        out["instructions"] = rest.pop(0)["content"]
    if len(rest) == 1 and extension(rest[0], KEY).get("input") == "text" and isinstance(rest[0].get("content"), str):
        out["input"] = rest[0]["content"]
    else:
        out["input"] = messages_to_responses_output(rest)
    return out


def messages_to_responses_output(messages: list[Message]) -> list[Item]:
    """The items our messages stand for, in order (a response's `output` for an assistant message)."""
    return [item for msg in messages for item in _items_out(msg)]


def _template(msg: Message) -> list[Item]:
    items = extension(msg, KEY).get("items")
    return items if isinstance(items, list) else []


def _items_out(msg: Message) -> list[Item]:
    if msg["role"] == "assistant":
        return _assistant_items(msg)
    if msg["role"] == "tool":
        return _single(msg, OUTPUT_TYPES, lambda like: output_out(msg.get("content"), like, msg["tool_call_id"]))
    return _single(msg, ("message",), lambda like: message_item(msg["role"], msg.get("content"), like))


def _single(msg: Message, kinds: tuple[str, ...], render: Any) -> list[Item]:
    """The template with its one mapped item rendered from the message (the rendered item alone without)."""
    template = _template(msg)
    if not any(item_kind(i) in kinds for i in template):
        return [render(None), *template]
    out, done = [], False
    for item in template:
        if item_kind(item) in kinds and not done:
            done = True
            original = _unit_message([item], first=msg["role"] == "system")
            unchanged = {k: v for k, v in original.items() if k != KEY} == {
                k: v for k, v in msg.items() if k != KEY}
            out.append(item if unchanged else render(item))
        else:
            out.append(item)
    return out


def _assistant_items(msg: Message) -> list[Item]:
    template, content, calls = _template(msg), msg.get("content"), list(msg.get("tool_calls") or [])
    parts = [] if content is None else _as_parts(content)
    if not template:
        head = [message_item("assistant", content)] if content not in (None, "", []) else []
        return head + [call_item(c) for c in calls]
    if msg.get("reasoning") != items_reasoning(template):  # reasoning cannot be rebuilt: it goes
        template = [i for i in template if item_kind(i) != "reasoning"]
    out: list[Item] = []
    for item in template:
        if item_kind(item) != "message":
            out.append(item)
            continue
        mapped = _as_parts(item_parts(item["content"]))
        take, parts = parts[:len(mapped)], parts[len(mapped):]
        if take == mapped:
            out.append(item)
        elif take:
            out.append(message_item("assistant", take, item))
    if parts:
        out.append(message_item("assistant", parts))
    return merge_blocks(out, calls, item_call, call_item)


def looks_responses(doc: dict[str, Any]) -> bool:
    """A Responses request: an `input` (string or items) and no `messages`."""
    return isinstance(doc.get("input"), (str, list)) and "messages" not in doc
