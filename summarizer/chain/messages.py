"""Canonical chain messages: OpenAI Chat Completions dicts plus PentAGI's reasoning extension keys.

Validation is strict about the shape the summarizer relies on and precise about what is wrong
(`MessageError.index`, `.field`, `.reason`), but it keeps unknown keys: providers add fields such as
`refusal` or `annotations`, and the chain must round-trip them verbatim.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = [
    "ROLES", "MessageError", "validate_messages", "validate_message", "text_parts", "content_text",
    "utf8_len", "message_size", "tool_call_size", "tool_result_size", "valid_calls", "call_names",
    "chain_bytes", "clone",
]

ROLES = ("system", "user", "assistant", "tool")
_PART_TYPES = ("text", "image_url")
Message = dict[str, Any]


class MessageError(ValueError):
    """One message breaks the format: which one (`index`), which key (`field`) and why (`reason`)."""

    def __init__(self, index: int, field: str, reason: str) -> None:
        super().__init__(f"message {index}: {field}: {reason}")
        self.index, self.field, self.reason = index, field, reason


def _check_parts(index: int, parts: list[Any], field: str) -> None:
    for p, part in enumerate(parts):
        where = f"{field}[{p}]"
        if not isinstance(part, dict):
            raise MessageError(index, where, "content part must be an object")
        kind = part.get("type")
        if kind not in _PART_TYPES:
            raise MessageError(index, f"{where}.type", f"unsupported content part type {kind!r}")
        if kind == "text" and not isinstance(part.get("text"), str):
            raise MessageError(index, f"{where}.text", "text part needs a string 'text'")
        if kind == "image_url":
            image = part.get("image_url")
            if not isinstance(image, dict) or not isinstance(image.get("url"), str):
                raise MessageError(index, f"{where}.image_url", "image part needs {'url': str}")
            if image.get("detail") is not None and not isinstance(image["detail"], str):
                raise MessageError(index, f"{where}.image_url.detail", "detail must be a string")


def _check_content(index: int, msg: Message) -> None:
    role = msg["role"]
    if "content" not in msg:
        if role == "assistant":
            return
        raise MessageError(index, "content", f"a {role} message needs 'content'")
    content = msg["content"]
    if content is None:
        if role != "assistant":
            raise MessageError(index, "content", f"a {role} message cannot have null content")
    elif isinstance(content, list):
        _check_parts(index, content, "content")
    elif not isinstance(content, str):
        raise MessageError(index, "content", "content must be a string, null or a list of parts")


def _check_reasoning(index: int, value: Any, field: str) -> None:
    if value is None:
        return
    if not isinstance(value, dict):
        raise MessageError(index, field, "reasoning must be an object")
    for key in ("content", "signature"):
        if value.get(key) is not None and not isinstance(value[key], str):
            raise MessageError(index, f"{field}.{key}", "must be a string or null")


def _check_tool_calls(index: int, calls: Any) -> None:
    if not isinstance(calls, list):
        raise MessageError(index, "tool_calls", "tool_calls must be a list")
    for c, call in enumerate(calls):
        where = f"tool_calls[{c}]"
        if not isinstance(call, dict):
            raise MessageError(index, where, "tool call must be an object")
        if not isinstance(call.get("id"), str) or not call["id"]:
            raise MessageError(index, f"{where}.id", "tool call needs a non-empty string id")
        if call.get("type") not in (None, "function"):
            raise MessageError(index, f"{where}.type", "tool call type must be 'function'")
        fn = call.get("function")
        # A null function is PentAGI's "broken call" case; parsing removes it, so it is accepted here.
        if fn is not None:
            if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
                raise MessageError(index, f"{where}.function.name", "function needs a string name")
            if not isinstance(fn.get("arguments"), str):
                raise MessageError(index, f"{where}.function.arguments", "arguments must be a JSON string")
        _check_reasoning(index, call.get("reasoning"), f"{where}.reasoning")


def validate_message(index: int, msg: Any) -> None:
    """Raise MessageError when `msg` is not a usable chain message."""
    if not isinstance(msg, dict):
        raise MessageError(index, "message", "message must be an object")
    role = msg.get("role")
    if role not in ROLES:
        raise MessageError(index, "role", f"role must be one of {', '.join(ROLES)}, got {role!r}")
    _check_content(index, msg)
    if "tool_calls" in msg:
        if role != "assistant":
            raise MessageError(index, "tool_calls", "only assistant messages carry tool_calls")
        _check_tool_calls(index, msg["tool_calls"])
    if role == "tool":
        if not isinstance(msg.get("tool_call_id"), str) or not msg["tool_call_id"]:
            raise MessageError(index, "tool_call_id", "a tool message needs a non-empty tool_call_id")
    elif "tool_call_id" in msg:
        raise MessageError(index, "tool_call_id", "only tool messages carry tool_call_id")
    if msg.get("name") is not None and not isinstance(msg["name"], str):  # any role: 5 or ["a"] is no name
        raise MessageError(index, "name", "name must be a string")
    if "reasoning" in msg:
        if role != "assistant":
            raise MessageError(index, "reasoning", "only assistant messages carry reasoning")
        _check_reasoning(index, msg["reasoning"], "reasoning")


def validate_messages(messages: Any) -> None:
    """Validate a whole chain; the first problem found is raised as MessageError."""
    if not isinstance(messages, list):
        raise MessageError(-1, "messages", "a chain must be a list of messages")
    for index, msg in enumerate(messages):
        validate_message(index, msg)


def utf8_len(text: str | None) -> int:
    """PentAGI measures Go strings: UTF-8 bytes, not characters."""
    return len(text.encode("utf-8")) if text else 0


def text_parts(msg: Message) -> list[str]:
    """The texts of a message's content, in order (image parts skipped)."""
    content = msg.get("content")
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [p["text"] for p in content if p.get("type") == "text"]
    return []


def content_text(msg: Message) -> str:
    return "\n".join(text_parts(msg))


def _content_size(msg: Message) -> int:
    content = msg.get("content")
    if isinstance(content, str):
        return utf8_len(content)
    if not isinstance(content, list):
        return 0
    total = 0
    for part in content:
        if part.get("type") == "text":
            total += utf8_len(part.get("text"))
        elif part.get("type") == "image_url":
            total += utf8_len(part["image_url"].get("url"))
    return total


def tool_call_size(call: dict[str, Any]) -> int:
    """bytes(id) + bytes(type) + bytes(name) + bytes(arguments); name/arguments only for a real function."""
    size = utf8_len(call.get("id")) + utf8_len(call.get("type"))
    fn = call.get("function")
    if fn is not None:
        size += utf8_len(fn.get("name")) + utf8_len(fn.get("arguments"))
    return size


def tool_result_size(msg: Message, call_name: str | None) -> int:
    """A tool result counts its id, the name of the call it answers and its content (PentAGI's rule)."""
    name = call_name if call_name is not None else msg.get("name")
    return utf8_len(msg.get("tool_call_id")) + utf8_len(name) + _content_size(msg)


def message_size(msg: Message, call_names: dict[str, str] | None = None) -> int:
    """Size of one message in PentAGI bytes; reasoning is never counted."""
    if msg["role"] == "tool":
        return tool_result_size(msg, (call_names or {}).get(msg["tool_call_id"]))
    size = _content_size(msg)
    for call in msg.get("tool_calls") or ():
        size += tool_call_size(call)
    return size


def valid_calls(msg: Message) -> list[dict[str, Any]]:
    """Tool calls that count as calls: those with a non-null function."""
    return [c for c in msg.get("tool_calls") or () if c.get("function") is not None]


def call_names(messages: Iterable[Message]) -> dict[str, str]:
    names: dict[str, str] = {}
    for msg in messages:
        for call in valid_calls(msg):
            names[call["id"]] = call["function"]["name"]
    return names


def chain_bytes(messages: list[Message]) -> int:
    """Size of a flat chain without parsing it (tool results sized by the latest call with their id)."""
    names: dict[str, str] = {}
    total = 0
    for msg in messages:
        for call in valid_calls(msg):
            names[call["id"]] = call["function"]["name"]
        total += message_size(msg, names)
    return total


def clone(value: Any) -> Any:
    """Copy JSON-shaped data; several times faster than copy.deepcopy on chains."""
    if isinstance(value, dict):
        return {k: clone(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clone(v) for v in value]
    return value
