"""OpenClaw / pi session JSONL <-> our messages (see summarizer.formats.convert for the rules both directions keep).

pi stores a session as one JSON entry per line; `message` entries carry user / assistant / toolResult messages,
entries form a tree through id/parentId (the active branch ends at the last entry), and pi has no system role,
so a system message travels as a `custom` entry pi itself ignores.
"""
from __future__ import annotations

import hashlib
import json
from typing import Any

from summarizer.formats.common import (
    FormatError,
    _call_names,
    _canonical,
    _drop_redundant_names,
    _parts_of,
    _require,
    _text_or_parts,
)

__all__ = ["PI_SYSTEM_CUSTOM_TYPE", "import_openclaw", "export_openclaw"]

PI_SYSTEM_CUSTOM_TYPE = "pentagi-web/system"  # pi has no system role; a custom entry carries it, ignored by pi
PI_SESSION_VERSION = 3
PI_EPOCH = "1970-01-01T00:00:00.000Z"  # exports carry no clock: the same chain always gives the same file


def _pi_blocks(content: Any, i: int) -> list[dict[str, Any]]:
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        raise FormatError("message content must be a string or a list of blocks", line=i)
    return content


def _pi_content_part(block: dict[str, Any], i: int) -> dict[str, Any]:
    kind = block.get("type")
    if kind == "text":
        _require(isinstance(block.get("text"), str), "text block without text", line=i)
        return {"type": "text", "text": block["text"]}
    if kind == "image":
        url = block.get("url") or f"data:{block.get('mimeType', '')};base64,{block.get('data', '')}"
        image = {"url": url, **({"detail": block["detail"]} if block.get("detail") is not None else {})}
        return {"type": "image_url", "image_url": image}
    raise FormatError(f"unknown content block {kind!r}", line=i)


def _pi_call(block: dict[str, Any], i: int) -> dict[str, Any]:
    args = block.get("argumentsJson")
    if not isinstance(args, str):
        raw = block.get("arguments", {})
        args = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)
    out = {"id": str(block.get("id", "")), "type": "function",
           "function": {"name": str(block.get("name", "")), "arguments": args}}
    if block.get("thoughtSignature"):
        out["reasoning"] = {"signature": block["thoughtSignature"]}
    _require(bool(out["id"]), "toolCall block without an id", line=i)
    return out


def _pi_message(msg: dict[str, Any], i: int) -> dict[str, Any] | None:
    role = msg.get("role")
    blocks = _pi_blocks(msg.get("content"), i)
    if role == "user":
        if isinstance(msg.get("content"), str):
            return _canonical("user", msg["content"])
        return _canonical("user", [_pi_content_part(b, i) for b in blocks] or None)
    if role == "assistant":
        texts, calls, thinking, signature = [], [], [], None
        for block in blocks:
            if block.get("type") == "toolCall":
                calls.append(_pi_call(block, i))
            elif block.get("type") == "thinking":
                thinking.append(str(block.get("thinking", "")))
                signature = signature or block.get("thinkingSignature")
            else:
                texts.append(_pi_content_part(block, i))
        reasoning = {"content": "\n".join(thinking), "signature": signature} if thinking else None
        return _canonical("assistant", _text_or_parts(texts), tool_calls=calls, reasoning=reasoning)
    if role == "toolResult":
        _require(isinstance(msg.get("toolCallId"), str), "toolResult without toolCallId", line=i)
        parts = [_pi_content_part(b, i) for b in blocks]
        return _canonical("tool", _text_or_parts(parts), tool_call_id=msg["toolCallId"],
                          name=str(msg.get("toolName") or ""))
    return None  # bashExecution, custom, branchSummary, compactionSummary: pi-specific, not agent history


def _pi_active_path(entries: list[tuple[int, dict[str, Any]]]) -> list[tuple[int, dict[str, Any]]]:
    """Entries on the branch ending at the last entry (pi sessions are trees via id/parentId)."""
    by_id = {e.get("id"): (n, e) for n, e in entries if e.get("id")}
    if not entries or not by_id or "parentId" not in entries[-1][1]:
        return entries
    path, seen = [], set()
    node: tuple[int, dict[str, Any]] | None = entries[-1]
    while node is not None and id(node[1]) not in seen:
        seen.add(id(node[1]))
        path.append(node)
        node = by_id.get(node[1].get("parentId"))
    return list(reversed(path))


def import_openclaw(doc: Any) -> list[dict[str, Any]]:
    entries = doc if isinstance(doc, list) else [doc]
    numbered = []
    for n, entry in enumerate(entries, start=1):
        _require(isinstance(entry, dict), f"expected a JSON object, got {type(entry).__name__}", line=n)
        _require(isinstance(entry.get("type"), str), "entry without 'type'", line=n)
        if entry["type"] != "session":
            numbered.append((n, entry))
    out = []
    for n, entry in _pi_active_path(numbered):
        if entry["type"] == "custom" and entry.get("customType") == PI_SYSTEM_CUSTOM_TYPE:
            data = entry.get("data") or {}
            out.append(_canonical("system", data.get("content")))
        elif entry["type"] == "message":
            _require(isinstance(entry.get("message"), dict), "message entry without 'message'", line=n)
            msg = _pi_message(entry["message"], n)
            if msg is not None:
                out.append(msg)
    return _drop_redundant_names(out)


def _pi_out_block(part: dict[str, Any]) -> dict[str, Any]:
    if part.get("type") == "image_url":
        image = part.get("image_url") or {}
        url = str(image.get("url", ""))
        # pi images are base64 data; a remote URL (and OpenAI's detail) ride along as extra keys pi ignores
        if url.startswith("data:") and ";base64," in url:
            mime, data = url[5:].split(";base64,", 1)
            block = {"type": "image", "data": data, "mimeType": mime}
        else:
            block = {"type": "image", "url": url}
        return {**block, **({"detail": image["detail"]} if image.get("detail") is not None else {})}
    return dict(part)


def _pi_out_call(call: dict[str, Any]) -> dict[str, Any]:
    raw = call["function"].get("arguments", "")
    block: dict[str, Any] = {"type": "toolCall", "id": call.get("id", ""), "name": call["function"].get("name", "")}
    try:
        parsed = json.loads(raw)
    except (TypeError, ValueError):
        parsed = None
    block["arguments"] = parsed if isinstance(parsed, dict) else {}
    if not isinstance(parsed, dict) or json.dumps(parsed, ensure_ascii=False) != raw:
        block["argumentsJson"] = raw  # pi stores an object; the exact original string rides along for round-trips
    signature = (call.get("reasoning") or {}).get("signature")
    if signature:
        block["thoughtSignature"] = signature
    return block


def _pi_out_message(msg: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    role, content = msg["role"], msg.get("content")
    if role == "user":
        return {"role": "user", "content": content if isinstance(content, str) else
                [_pi_out_block(p) for p in _parts_of(content)]}
    if role == "tool":
        return {"role": "toolResult", "toolCallId": msg.get("tool_call_id", ""),
                "toolName": msg.get("name") or names.get(msg.get("tool_call_id", ""), ""),
                "content": [_pi_out_block(p) for p in _parts_of(content)], "isError": False}
    blocks: list[dict[str, Any]] = []
    reasoning = msg.get("reasoning")
    if isinstance(reasoning, dict) and reasoning.get("content") is not None:
        thinking = {"type": "thinking", "thinking": reasoning["content"]}
        if reasoning.get("signature"):
            thinking["thinkingSignature"] = reasoning["signature"]
        blocks.append(thinking)
    blocks += [_pi_out_block(p) for p in _parts_of(content)]
    blocks += [_pi_out_call(c) for c in msg.get("tool_calls") or []]
    return {"role": "assistant", "content": blocks,
            "stopReason": "toolUse" if msg.get("tool_calls") else "stop"}


def export_openclaw(messages: list[dict[str, Any]]) -> str:
    names = _call_names(messages)
    digest = hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()
    lines = [{"type": "session", "version": PI_SESSION_VERSION, "id": digest[:32], "timestamp": PI_EPOCH, "cwd": ""}]
    parent = None
    for i, msg in enumerate(messages):
        entry: dict[str, Any] = {"id": f"{i + 1:08x}", "parentId": parent, "timestamp": PI_EPOCH}
        if msg["role"] == "system":
            entry.update(type="custom", customType=PI_SYSTEM_CUSTOM_TYPE, data={"content": msg.get("content")})
        else:
            entry.update(type="message", message=_pi_out_message(msg, names))
        lines.append(entry)
        parent = entry["id"]
    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
