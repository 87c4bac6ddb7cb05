"""Shared pieces of the transcript importers/exporters (see summarizer.formats.convert): errors and canonical shapes."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = [
    "FormatError", "_require", "_call_names", "_drop_redundant_names", "_canonical", "_message_reasoning",
    "_call_reasoning", "_text_or_parts", "_parts_of",
]


class FormatError(ValueError):
    """A file that is not valid in the format it claims (or any format). Carries where it broke."""

    def __init__(self, message: str, *, line: int | None = None, index: int | None = None) -> None:
        self.reason = message
        self.line = line
        self.index = index
        where = f"line {line}: " if line is not None else f"message {index}: " if index is not None else ""
        super().__init__(where + message)


# ----------------------------------------------------------------------------------------------- helpers

def _require(cond: bool, reason: str, **where: int) -> None:
    if not cond:
        raise FormatError(reason, **where)


def _call_names(messages: Iterable[dict[str, Any]]) -> dict[str, str]:
    names: dict[str, str] = {}
    for msg in messages:
        for call in msg.get("tool_calls") or []:
            fn = call.get("function") or {}
            names[str(call.get("id", ""))] = str(fn.get("name", ""))
    return names


def _drop_redundant_names(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    names = _call_names(messages)
    for msg in messages:
        if msg["role"] == "tool" and "name" in msg and names.get(msg["tool_call_id"]) == msg["name"]:
            del msg["name"]
    return messages


def _canonical(role: str, content: Any, *, tool_calls: list[dict[str, Any]] | None = None,
               tool_call_id: str | None = None,
               name: str = "", reasoning: Any = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": role, "content": content}
    if tool_calls:
        msg["tool_calls"] = tool_calls
    if role == "tool":
        msg["tool_call_id"] = tool_call_id or ""
    if name:
        msg["name"] = name
    if reasoning is not None:
        msg["reasoning"] = reasoning
    return msg


def _message_reasoning(obj: Any) -> Any:
    """A message's reasoning is always {'content', 'signature'} (either may be null)."""
    if not isinstance(obj, dict):
        return obj
    return {"content": obj.get("content", obj.get("Content")), "signature": obj.get("signature", obj.get("Signature"))}


def _call_reasoning(obj: Any) -> Any:
    """A tool call's reasoning is {'signature'} plus 'content' when there is any."""
    if not isinstance(obj, dict):
        return obj
    out = {"signature": obj.get("signature", obj.get("Signature"))}
    content = obj.get("content", obj.get("Content"))
    if content is not None:
        out["content"] = content
    return out


def _text_or_parts(parts: list[dict[str, Any]]) -> Any:
    """One text part is a plain string; none is null; anything else stays a list of parts."""
    if not parts:
        return None
    if len(parts) == 1 and parts[0].get("type") == "text":
        return parts[0]["text"]
    return parts


def _parts_of(content: Any) -> list[dict[str, Any]]:
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content)
