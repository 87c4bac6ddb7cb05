"""Importers and exporters between our message format (OpenAI chat dicts) and five agent formats.

- "openai": a list of Chat Completions messages, or `{"messages": [...]}` (extra top-level keys ignored).
- "pentagi": PentAGI's msgchain JSON (`{"role","text"}` / `{"role","parts":[...]}`, roles human/ai/system/tool).
- "openclaw": an OpenClaw / pi session JSONL (one entry per line; `message` entries with user / assistant /
  toolResult messages; everything else that is not part of the model's context is ignored on import).
- "anthropic": an Anthropic Messages request, `{"system"?, "messages"}` (summarizer.formats.anthropic).
- "responses": an OpenAI Responses request, `{"instructions"?, "input"}` (summarizer.formats.responses).

Every importer returns *canonical* messages: `role` and `content` always; `tool_calls` only when non-empty;
`tool_call_id` only on tool messages; `name` and `reasoning` only when set. A tool message's `name` is dropped
when it merely repeats the function name of the call it answers (sizing takes that name from the call anyway),
which makes `import_chain(export_chain(x, fmt), fmt) == x` hold for every chain an importer can produce in
the TRANSCRIPT_FORMATS (pi has no system role: system messages travel as `custom` entries). The two wire
formats give an agent's request back exactly (`export_chain(import_chain(r, f), f)` is r's messages) and keep
what a model sees of any other chain; what they cannot carry of it (a tool message's name, arguments that are
not a JSON object, reasoning of another provider) is not sent.
Pure: no Django, no IO.
"""
from __future__ import annotations

import copy
import json
from typing import Any

from summarizer.formats.anthropic import anthropic_to_messages, looks_anthropic, messages_to_anthropic
from summarizer.formats.common import (
    FormatError,
    _call_names,
    _call_reasoning,
    _canonical,
    _drop_redundant_names,
    _message_reasoning,
    _parts_of,
    _require,
    _text_or_parts,
)
from summarizer.formats.openclaw import export_openclaw, import_openclaw
from summarizer.formats.responses import looks_responses, messages_to_responses, responses_to_messages

__all__ = ["FORMATS", "TRANSCRIPT_FORMATS", "FormatError", "detect_format", "import_chain", "export_chain"]

TRANSCRIPT_FORMATS = ("openai", "pentagi", "openclaw")  # lossless for every chain, whatever its source
FORMATS = (*TRANSCRIPT_FORMATS, "anthropic", "responses")
PENTAGI_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}
OUR_TO_PENTAGI = {v: k for k, v in PENTAGI_ROLES.items()}
MESSAGE_LIST_KEYS = ("messages",)


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
    except RecursionError:  # the decoder recurses per nesting level: a hostile file can exhaust the stack
        raise FormatError("malformed JSON: nested too deeply") from None
    except json.JSONDecodeError as first:
        lines = [ln for ln in _lines(text) if ln.strip()]
        if len(lines) < 2:
            raise FormatError(f"malformed JSON: {first.msg} (column {first.colno})", line=first.lineno) from None
    except ValueError as exc:  # an integer over Python's int conversion limit (4,300 digits)
        raise FormatError(f"malformed JSON: {exc}") from None
    return _parse_jsonl(text)


def _lines(text: str) -> list[str]:
    """JSONL lines: only \n ends one (str.splitlines would also split inside strings at U+0085, U+2028...)."""
    return [ln.removesuffix("\r") for ln in text.split("\n")]


def _parse_jsonl(text: str) -> list[Any]:
    entries = []
    for number, raw in enumerate(_lines(text), start=1):
        if not raw.strip():
            continue
        try:
            entries.append(json.loads(raw))
        except RecursionError:
            raise FormatError("malformed JSON line: nested too deeply", line=number) from None
        except json.JSONDecodeError as exc:
            raise FormatError(f"malformed JSON line: {exc.msg} (column {exc.colno})", line=number) from None
        except ValueError as exc:
            raise FormatError(f"malformed JSON line: {exc}", line=number) from None
    return entries


def _looks_pentagi(item: Any) -> bool:
    return isinstance(item, dict) and (
        item.get("role") in ("human", "ai") or (("parts" in item or "text" in item) and "content" not in item))


def _detect_parsed(doc: Any) -> str:
    if isinstance(doc, dict):
        if isinstance(doc.get("messages"), list):
            return "anthropic" if looks_anthropic(doc) else "openai"
        if looks_responses(doc):
            return "responses"
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
    """One of FORMATS for raw text/bytes or already-parsed JSON (a wire format only when it shows: Anthropic's
    top-level `system` or one of its own block types, a Responses `input`)."""
    doc = _parse_text(data) if isinstance(data, (str, bytes)) else data
    return _detect_parsed(doc)


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


_OPENAI_MAPPED_KEYS = frozenset({"role", "content", "tool_calls", "tool_call_id", "name", "reasoning",
                                 "reasoning_content"})


def _import_openai(doc: Any) -> list[dict[str, Any]]:
    items = doc.get("messages") if isinstance(doc, dict) else doc
    if not isinstance(items, list):
        raise FormatError("expected a list of messages or {'messages': [...]}")
    out = []
    for i, msg in enumerate(items):
        _require(isinstance(msg, dict), f"expected an object, got {type(msg).__name__}", index=i)
        _require(isinstance(msg.get("role"), str), "missing 'role'", index=i)
        reasoning = _message_reasoning(msg.get("reasoning"))
        if reasoning is None and msg.get("reasoning_content"):
            reasoning = {"content": msg["reasoning_content"], "signature": None}
        calls = msg.get("tool_calls") or []
        _require(isinstance(calls, list), "'tool_calls' must be a list", index=i)
        _require(isinstance(msg.get("name"), (str, type(None))), "'name' must be a string", index=i)
        canonical = _canonical(
            msg["role"], msg.get("content"), tool_calls=[_openai_call(c, i) for c in calls],
            tool_call_id=str(msg.get("tool_call_id") or ""), name=msg.get("name") or "", reasoning=reasoning)
        # Keys we do not model (refusal, annotations, audio, a vendor's own) travel verbatim (chain/messages.py).
        canonical.update({k: v for k, v in msg.items() if k not in _OPENAI_MAPPED_KEYS})
        out.append(canonical)
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
        if not isinstance(binary, dict):
            raise FormatError("binary part without 'binary'", index=i)
        return {"type": "image_url", "image_url": {
            "url": f"data:{binary.get('mime_type', 'application/octet-stream')};base64,{binary.get('data', '')}"}}
    raise FormatError(f"unknown part type {kind!r}", index=i)


def _pentagi_call(part: dict[str, Any], i: int) -> dict[str, Any]:
    call = part.get("tool_call")
    if not isinstance(call, dict):
        raise FormatError("tool_call part without 'tool_call'", index=i)
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
    if role is None:
        raise FormatError(f"unknown role {item.get('role')!r} (human, ai, system, tool)", index=i)
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


# ----------------------------------------------------------------------------------------------- public

IMPORTERS = {"openai": _import_openai, "pentagi": _import_pentagi, "openclaw": import_openclaw,
             "anthropic": anthropic_to_messages, "responses": responses_to_messages}


WIRE_EXPORTERS = {"anthropic": messages_to_anthropic, "responses": messages_to_responses}


def import_chain(data: Any, fmt: str | None = None) -> list[dict[str, Any]]:
    """Our canonical messages from raw text/bytes or parsed JSON; `fmt` None = detect. Raises FormatError."""
    if fmt is not None and fmt not in FORMATS:
        raise FormatError(f"unknown format {fmt!r} (one of {', '.join(FORMATS)})")
    try:
        if isinstance(data, (str, bytes)):
            doc = _parse_jsonl(_decode(data)) if fmt == "openclaw" else _parse_text(data)
        else:
            doc = copy.deepcopy(data)
        return IMPORTERS[fmt or _detect_parsed(doc)](doc)
    except RecursionError:  # values nested near Python's recursion limit: refuse them, never crash
        raise FormatError("the transcript is nested too deeply") from None


def export_chain(messages: list[dict[str, Any]], fmt: str) -> str | list[dict[str, Any]] | dict[str, Any]:
    """Messages in `fmt`: a JSON-ready list for openai / pentagi, JSONL text for openclaw, the request's
    conversation object for anthropic / responses."""
    if fmt == "openai":
        return copy.deepcopy(list(messages))
    if fmt == "pentagi":
        names = _call_names(messages)
        return [_export_pentagi_message(m, names) for m in messages]
    if fmt == "openclaw":
        return export_openclaw(list(messages))
    if fmt in WIRE_EXPORTERS:
        return WIRE_EXPORTERS[fmt](copy.deepcopy(list(messages)))
    raise FormatError(f"unknown format {fmt!r} (one of {', '.join(FORMATS)})")
