"""OpenAI Responses input/output items <-> our content parts, tool calls and reasoning (see .responses).

`input_text`/`output_text` parts are text parts and `input_image` (by URL) is an image part; `function_call`
and `custom_tool_call` are tool calls (`call_id` is the call's id), their `*_output` items tool messages; a
`reasoning` item is reasoning whose signature is its `encrypted_content`. Every other part or item (files,
refusals, built-in tool calls, item references, compaction items, types not invented yet) has no counterpart
and travels only in the message's extension.
"""
from __future__ import annotations

from typing import Any

from summarizer.formats.common import FormatError, _require
from summarizer.formats.wire import Block, IssuedCalls, Part, merge_blocks, require_str

__all__ = ["CALL_TYPES", "OUTPUT_TYPES", "item_kind", "check_item", "item_parts", "part_of", "part_out",
           "item_call", "call_item", "items_reasoning", "output_content", "output_out", "message_item"]

CALL_TYPES = ("function_call", "custom_tool_call")
OUTPUT_TYPES = ("function_call_output", "custom_tool_call_output")
ROLES = ("user", "assistant", "system", "developer")
TEXT_PARTS = ("input_text", "output_text")
Item = dict[str, Any]


def item_kind(item: Item) -> str:
    """The item's type; an easy-form message (`{role, content}`) has none and is a message."""
    kind = item.get("type")
    return kind if isinstance(kind, str) else "message" if "role" in item else ""


def check_item(item: Any, index: int, issued: IssuedCalls) -> Item:
    """The item when its known fields are well-formed; calls are issued, outputs checked against them."""
    _require(isinstance(item, dict), f"expected an item object, got {type(item).__name__}", index=index)
    kind = item_kind(item)
    if kind == "message":
        if item.get("role") not in ROLES:
            raise FormatError(f"a message's role must be one of {', '.join(ROLES)}, got {item.get('role')!r}",
                              index=index)
        _require(isinstance(item.get("content"), (str, list)), "a message's 'content' must be a string or parts",
                 index=index)
    elif kind in CALL_TYPES:
        issued.issue(require_str(item.get("call_id"), f"a {kind}'s 'call_id'", index, empty=False))
        require_str(item.get("name"), f"a {kind}'s 'name'", index)
        require_str(item.get("arguments" if kind == "function_call" else "input"), f"a {kind}'s arguments", index)
    elif kind in OUTPUT_TYPES:
        issued.check(require_str(item.get("call_id"), f"a {kind}'s 'call_id'", index, empty=False), kind, index)
        _require(isinstance(item.get("output"), (str, list)), f"a {kind}'s 'output' must be a string or parts",
                 index=index)
    elif kind == "reasoning":
        _require(isinstance(item.get("summary", []), list), "a reasoning item's 'summary' must be a list",
                 index=index)
        _require(isinstance(item.get("encrypted_content"), (str, type(None))),
                 "a reasoning item's 'encrypted_content' must be a string", index=index)
    elif not kind:
        raise FormatError("an item needs a 'type' (or a 'role' for a message)", index=index)
    checked: Item = item
    return checked


def part_of(part: Any) -> Part | None:
    """The content part an item's part stands for; None for parts without a counterpart."""
    if not isinstance(part, dict):
        return None
    if part.get("type") in TEXT_PARTS and isinstance(part.get("text"), str):
        return {"type": "text", "text": part["text"]}
    if part.get("type") == "input_image" and isinstance(part.get("image_url"), str):
        image: dict[str, Any] = {"url": part["image_url"]}
        if isinstance(part.get("detail"), str):
            image["detail"] = part["detail"]
        return {"type": "image_url", "image_url": image}
    return None


def part_out(part: Part, like: Block | None = None, *, assistant: bool = False) -> Block:
    """An item part for one of our content parts (the text part's type follows `like`, else the role)."""
    if part.get("type") == "image_url":
        image = part.get("image_url") or {}
        return {"type": "input_image", "image_url": str(image.get("url", "")), "detail": image.get("detail") or "auto"}
    kind = (like or {}).get("type")
    out: Block = {"type": kind if kind in TEXT_PARTS else "output_text" if assistant else "input_text",
                  "text": str(part.get("text", ""))}
    if like is not None and "annotations" in like:
        out["annotations"] = []  # annotations pointed into the old text
    return out


def item_parts(content: Any) -> Any:
    """Our content for a message item's content: the string, or the parts that have a counterpart."""
    if isinstance(content, str):
        return content
    return [p for p in map(part_of, content) if p is not None]


def message_item(role: str, content: Any, like: Item | None = None) -> Item:
    """A message item for our content, keeping the wrapper (type, id, status, role) of `like`."""
    assistant = role == "assistant"
    old = (like or {}).get("content")
    if isinstance(content, str) and not isinstance(old, list):
        new: Any = content
    else:
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])
        new = (merge_blocks(old, parts, part_of, lambda p, b: part_out(p, b, assistant=assistant))
               if isinstance(old, list) else [part_out(p, assistant=assistant) for p in parts])
    return {**(like or {"role": role}), "content": new}


def item_call(item: Item) -> dict[str, Any] | None:
    kind = item_kind(item)
    if kind not in CALL_TYPES:
        return None
    arguments = item["arguments"] if kind == "function_call" else item["input"]
    return {"id": item["call_id"], "type": "function", "function": {"name": item["name"], "arguments": arguments}}


def call_item(call: dict[str, Any], like: Item | None = None) -> Item:
    """A call item for one of our tool calls: a custom tool call stays one when `like` was."""
    fn = call.get("function") or {}
    base = like or {"type": "function_call"}
    key = "input" if base.get("type") == "custom_tool_call" else "arguments"
    return {**base, "call_id": call.get("id", ""), "name": fn.get("name", ""), key: fn.get("arguments", "")}


def items_reasoning(items: list[Item]) -> dict[str, Any] | None:
    """The reasoning a turn's reasoning items stand for: their summary text and the first encrypted content."""
    reasoning = [i for i in items if item_kind(i) == "reasoning"]
    if not reasoning:
        return None
    texts = [s["text"] for i in reasoning for s in i.get("summary") or []
             if isinstance(s, dict) and isinstance(s.get("text"), str)]
    signatures = [i["encrypted_content"] for i in reasoning if isinstance(i.get("encrypted_content"), str)]
    return {"content": "\n\n".join(texts) if texts else None, "signature": signatures[0] if signatures else None}


def output_content(item: Item) -> Any:
    return item_parts(item["output"])


def output_out(content: Any, like: Item | None, call_id: str) -> Item:
    """A call-output item for one of our tool messages, keeping the type and id of `like`."""
    old = (like or {}).get("output")
    if isinstance(content, list):
        output: Any = (merge_blocks(old, content, part_of, lambda p, b: part_out(p, b)) if isinstance(old, list)
                       else [part_out(p) for p in content])
    else:
        output = content if isinstance(content, str) else ""
    return {**(like or {"type": "function_call_output"}), "call_id": call_id, "output": output}
