"""Importers and exporters between our message format (OpenAI chat dicts) and three agent transcript formats.

- "openai": a list of Chat Completions messages, or `{"messages": [...]}` (extra top-level keys ignored).
- "pentagi": PentAGI's msgchain JSON (`{"role","text"}` / `{"role","parts":[...]}`, roles human/ai/system/tool).
- "openclaw": an OpenClaw / pi session JSONL (one entry per line; `message` entries with user / assistant /
  toolResult messages; everything else that is not part of the model's context is ignored on import).

Every importer returns *canonical* messages: `role` and `content` always; `tool_calls` only when non-empty;
`tool_call_id` only on tool messages; `name` and `reasoning` only when set. A tool message's `name` is dropped
when it merely repeats the function name of the call it answers (sizing takes that name from the call anyway),
which makes `import_chain(export_chain(x, fmt), fmt) == x` hold for every chain an importer can produce,
as far as the target format can carry it (pi has no system role: system messages travel as `custom` entries).
Pure: no Django, no IO.
"""
from __future__ import annotations

import copy
import hashlib
import json
from typing import Any, Iterable

__all__ = ["FORMATS", "FormatError", "detect_format", "import_chain", "export_chain"]

FORMATS = ("openai", "pentagi", "openclaw")
PENTAGI_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}
OUR_TO_PENTAGI = {v: k for k, v in PENTAGI_ROLES.items()}
PI_SYSTEM_CUSTOM_TYPE = "pentagi-web/system"  # pi has no system role; a custom entry carries it, ignored by pi
PI_SESSION_VERSION = 3
PI_EPOCH = "1970-01-01T00:00:00.000Z"  # exports carry no clock: the same chain always gives the same file
MESSAGE_LIST_KEYS = ("messages",)


class FormatError(ValueError):
    """A file that is not valid in the format it claims (or any format). Carries where it broke."""

    def __init__(self, message: str, *, line: int | None = None, index: int | None = None) -> None:
        self.reason = message
        self.line = line
        self.index = index
        where = f"line {line}: " if line is not None else f"message {index}: " if index is not None else ""
        super().__init__(where + message)


# ----------------------------------------------------------------------------------------------- detection

def _decode(data: str | bytes) -> str:
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise FormatError(f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    return data.lstrip("\ufeff")


def _parse_text(data: str | bytes) -> Any:
    """JSON document, or the list of entries of a JSONL file."""
    text = _decode(data)
    if not text.strip():
        raise FormatError("empty input")
    try:
        return json.loads(text)
    except json.JSONDecodeError as first:
        lines = [ln for ln in text.splitlines() if ln.strip()]
        if len(lines) < 2:
            raise FormatError(f"malformed JSON: {first.msg} (column {first.colno})", line=first.lineno) from None
    return _parse_jsonl(text)


def _parse_jsonl(text: str) -> list[Any]:
    entries = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            entries.append(json.loads(raw))
        except json.JSONDecodeError as exc:
            raise FormatError(f"malformed JSON line: {exc.msg} (column {exc.colno})", line=number) from None
    return entries


def _looks_pentagi(item: Any) -> bool:
    return isinstance(item, dict) and (
        item.get("role") in ("human", "ai") or (("parts" in item or "text" in item) and "content" not in item))


def _detect_parsed(doc: Any) -> str:
    if isinstance(doc, dict):
        if isinstance(doc.get("messages"), list):
            return "openai"
        if "type" in doc:
            return "openclaw"
        raise FormatError("a JSON object without a 'messages' list is not a chain")
    if isinstance(doc, list):
        first = next((x for x in doc if isinstance(x, dict)), None)
        if first is None:
            return "openai"
        if "type" in first and "role" not in first:
            return "openclaw"
        return "pentagi" if any(_looks_pentagi(x) for x in doc) else "openai"
    raise FormatError(f"expected a JSON list or object, got {type(doc).__name__}")


def detect_format(data: Any) -> str:
    """'openai' | 'pentagi' | 'openclaw' for raw text/bytes or already-parsed JSON."""
    doc = _parse_text(data) if isinstance(data, (str, bytes)) else data
    return _detect_parsed(doc)


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


def _canonical(role: str, content: Any, *, tool_calls: list | None = None, tool_call_id: str | None = None,
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


# ----------------------------------------------------------------------------------------------- openai

def _openai_call(call: Any, index: int) -> dict[str, Any]:
    _require(isinstance(call, dict) and isinstance(call.get("function"), dict),
             "each tool call needs a 'function' object", index=index)
    fn = call["function"]
    args = fn.get("arguments", "")
    out = {"id": str(call.get("id", "")), "type": call.get("type") or "function",
           "function": {"name": str(fn.get("name", "")),
                        "arguments": args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)}}
    if call.get("reasoning") is not None:
        out["reasoning"] = _call_reasoning(call["reasoning"])
    return out


def _import_openai(doc: Any) -> list[dict[str, Any]]:
    items = doc.get("messages") if isinstance(doc, dict) else doc
    _require(isinstance(items, list), "expected a list of messages or {'messages': [...]}")
    out = []
    for i, msg in enumerate(items):
        _require(isinstance(msg, dict), f"expected an object, got {type(msg).__name__}", index=i)
        _require(isinstance(msg.get("role"), str), "missing 'role'", index=i)
        reasoning = _message_reasoning(msg.get("reasoning"))
        if reasoning is None and msg.get("reasoning_content"):
            reasoning = {"content": msg["reasoning_content"], "signature": None}
        calls = msg.get("tool_calls") or []
        _require(isinstance(calls, list), "'tool_calls' must be a list", index=i)
        out.append(_canonical(
            msg["role"], msg.get("content"), tool_calls=[_openai_call(c, i) for c in calls],
            tool_call_id=str(msg.get("tool_call_id") or ""), name=str(msg.get("name") or ""), reasoning=reasoning))
    return _drop_redundant_names(out)


# ----------------------------------------------------------------------------------------------- pentagi

def _pentagi_reasoning(obj: Any) -> Any:
    """Reasoning as our {'content', 'signature'}; accepts Go-cased keys of the newer fork; empty = none."""
    reasoning = _message_reasoning(obj) if isinstance(obj, dict) else None
    return reasoning if reasoning and (reasoning["content"] is not None or reasoning["signature"] is not None) else None


def _pentagi_content_part(part: dict[str, Any], i: int) -> dict[str, Any]:
    kind = part.get("type")
    if kind == "text":
        _require(isinstance(part.get("text"), str), "text part without text", index=i)
        return {"type": "text", "text": part["text"]}
    if kind == "image_url":
        _require(isinstance(part.get("image_url"), dict), "image_url part without 'image_url'", index=i)
        return {"type": "image_url", "image_url": dict(part["image_url"])}
    if kind == "binary":
        # Our format (like OpenAI's) has no binary part: the bytes travel as a data URL image part.
        binary = part.get("binary")
        _require(isinstance(binary, dict), "binary part without 'binary'", index=i)
        return {"type": "image_url", "image_url": {
            "url": f"data:{binary.get('mime_type', 'application/octet-stream')};base64,{binary.get('data', '')}"}}
    raise FormatError(f"unknown part type {kind!r}", index=i)


def _pentagi_call(part: dict[str, Any], i: int) -> dict[str, Any]:
    call = part.get("tool_call")
    _require(isinstance(call, dict), "tool_call part without 'tool_call'", index=i)
    fn = call.get("function") or {}
    out = {"id": str(call.get("id", "")), "type": call.get("type") or "function",
           "function": {"name": str(fn.get("name", "")), "arguments": str(fn.get("arguments", ""))}}
    reasoning = _pentagi_reasoning(part.get("reasoning") or call.get("reasoning"))
    if reasoning is not None:
        out["reasoning"] = _call_reasoning(reasoning)
    return out


def _pentagi_message(item: Any, i: int) -> list[dict[str, Any]]:
    _require(isinstance(item, dict), f"expected an object, got {type(item).__name__}", index=i)
    role = PENTAGI_ROLES.get(item.get("role"))
    _require(role is not None, f"unknown role {item.get('role')!r} (human, ai, system, tool)", index=i)
    if "parts" not in item:
        _require(isinstance(item.get("text"), str), "message needs 'text' or 'parts'", index=i)
        return [_canonical(role, item["text"])]
    parts = item["parts"]
    _require(isinstance(parts, list), "'parts' must be a list", index=i)
    content, calls, responses, reasoning = [], [], [], None
    for part in parts:
        _require(isinstance(part, dict), "each part must be an object", index=i)
        if part.get("type") == "tool_call":
            calls.append(_pentagi_call(part, i))
        elif part.get("type") == "tool_response":
            responses.append(part.get("tool_response"))
        else:
            content.append(_pentagi_content_part(part, i))
            if reasoning is None and part.get("type") == "text":
                reasoning = _pentagi_reasoning(part.get("reasoning"))
    if role == "tool":
        _require(bool(responses) and not content and not calls, "a tool message holds tool_response parts only",
                 index=i)
        return [_pentagi_response(r, i) for r in responses]
    _require(not responses, f"tool_response part in a {item['role']} message", index=i)
    _require(not calls or role == "assistant", f"tool_call part in a {item['role']} message", index=i)
    return [_canonical(role, _text_or_parts(content), tool_calls=calls, reasoning=reasoning)]


def _pentagi_response(resp: Any, i: int) -> dict[str, Any]:
    _require(isinstance(resp, dict), "tool_response part without 'tool_response'", index=i)
    content = resp.get("content", "")
    return _canonical("tool", content if isinstance(content, str) else json.dumps(content, ensure_ascii=False),
                      tool_call_id=str(resp.get("tool_call_id", "")), name=str(resp.get("name") or ""))


def _import_pentagi(doc: Any) -> list[dict[str, Any]]:
    if isinstance(doc, dict) and isinstance(doc.get("chain"), list):
        doc = doc["chain"]
    _require(isinstance(doc, list), "a PentAGI msgchain is a JSON list of messages")
    out: list[dict[str, Any]] = []
    for i, item in enumerate(doc):
        out.extend(_pentagi_message(item, i))
    return _drop_redundant_names(out)


def _export_pentagi_message(msg: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    role = OUR_TO_PENTAGI.get(msg["role"], msg["role"])
    if msg["role"] == "tool":
        name = msg.get("name") or names.get(msg.get("tool_call_id", ""), "")
        content = msg.get("content")
        text = content if isinstance(content, str) else "" if content is None else json.dumps(content)
        return {"role": role, "parts": [{"type": "tool_response", "tool_response": {
            "tool_call_id": msg.get("tool_call_id", ""), "name": name, "content": text}}]}
    parts = _parts_of(msg.get("content"))
    if len(parts) == 1 and parts[0].get("type") == "text" and not msg.get("tool_calls") and not msg.get("reasoning"):
        return {"role": role, "text": parts[0]["text"]}
    parts = [dict(p) for p in parts]
    if msg.get("reasoning") is not None:
        if not any(p.get("type") == "text" for p in parts):
            parts.insert(0, {"type": "text", "text": ""})
        next(p for p in parts if p.get("type") == "text")["reasoning"] = msg["reasoning"]
    for call in msg.get("tool_calls") or []:
        part: dict[str, Any] = {"type": "tool_call", "tool_call": {
            "id": call.get("id", ""), "type": call.get("type", "function"), "function": dict(call["function"])}}
        if call.get("reasoning") is not None:
            part["reasoning"] = call["reasoning"]
        parts.append(part)
    return {"role": role, "parts": parts}


# ----------------------------------------------------------------------------------------------- openclaw / pi

def _pi_blocks(content: Any, i: int) -> list[dict[str, Any]]:
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    _require(isinstance(content, list), "message content must be a string or a list of blocks", line=i)
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
    path, node, seen = [], entries[-1], set()
    while node is not None and id(node[1]) not in seen:
        seen.add(id(node[1]))
        path.append(node)
        node = by_id.get(node[1].get("parentId"))
    return list(reversed(path))


def _import_openclaw(doc: Any) -> list[dict[str, Any]]:
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


def _export_openclaw(messages: list[dict[str, Any]]) -> str:
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


# ----------------------------------------------------------------------------------------------- public

IMPORTERS = {"openai": _import_openai, "pentagi": _import_pentagi, "openclaw": _import_openclaw}


def import_chain(data: Any, fmt: str | None = None) -> list[dict[str, Any]]:
    """Our canonical messages from raw text/bytes or parsed JSON; `fmt` None = detect. Raises FormatError."""
    if fmt is not None and fmt not in FORMATS:
        raise FormatError(f"unknown format {fmt!r} (one of {', '.join(FORMATS)})")
    if isinstance(data, (str, bytes)):
        doc = _parse_jsonl(_decode(data)) if fmt == "openclaw" else _parse_text(data)
    else:
        doc = copy.deepcopy(data)
    return IMPORTERS[fmt or _detect_parsed(doc)](doc)


def export_chain(messages: list[dict[str, Any]], fmt: str) -> str | list[dict[str, Any]]:
    """Messages in `fmt`: a JSON-ready list for openai / pentagi, JSONL text for openclaw."""
    if fmt == "openai":
        return copy.deepcopy(list(messages))
    if fmt == "pentagi":
        names = _call_names(messages)
        return [_export_pentagi_message(m, names) for m in messages]
    if fmt == "openclaw":
        return _export_openclaw(list(messages))
    raise FormatError(f"unknown format {fmt!r} (one of {', '.join(FORMATS)})")
