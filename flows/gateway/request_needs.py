"""What a Chat Completions request needs besides its messages: its tools, its response schema, its max output.

The protocol-neutral fit (`flows.pipeline.request_budget`) takes a `RequestNeeds`; this module is the Chat
Completions side of it: validate the fields the fit reads (a clear 400 for a request the provider would refuse
anyway, before anything is written) and count them with our tokenizer. Another wire format supplies its own
counts (the Anthropic Messages / Responses breakdown is `flows.engine.request_tokens`).
"""
from __future__ import annotations

import functools
import json
import re
from typing import Any

from flows.engine import schema_tokens, tools_tokens
from flows.gateway.wire import GatewayError
from flows.pipeline import RequestNeeds

__all__ = ["OUTPUT_FIELDS", "MAX_TOOLS", "MAX_TOOLS_BYTES", "MAX_OUTPUT_ACCEPTED", "chat_needs", "check_chat_fields"]

OUTPUT_FIELDS = ("max_completion_tokens", "max_tokens")  # the newer name first: it wins when both are given
MAX_TOOLS = 128  # OpenAI's own limit on tools per request
MAX_TOOLS_BYTES = 1024 * 1024  # the JSON of all tool schemas; PentAGI's 30 tools are ~40 KB
MAX_OUTPUT_ACCEPTED = 10_000_000  # no model answers more; a larger cap is a bug in the agent
MAX_SCHEMA_DEPTH = 32
_NAME = re.compile(r"^[A-Za-z0-9_.:-]{1,128}$")
_JSON_TYPES = frozenset({"string", "number", "integer", "boolean", "object", "array", "null"})


def _bad(message: str, param: str) -> GatewayError:
    return GatewayError(400, message, code="invalid_request_error" if param == "" else f"invalid_{param}")


def _max_output(body: dict[str, Any]) -> int | None:
    for field in OUTPUT_FIELDS:
        value = body.get(field)
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_OUTPUT_ACCEPTED:
            raise _bad(f"'{field}' must be an integer from 1 to {MAX_OUTPUT_ACCEPTED:,}, got {json.dumps(value)[:40]}",
                       field)
    values = [body[f] for f in OUTPUT_FIELDS if body.get(f) is not None]
    return values[0] if values else None


def _check_schema(schema: Any, where: str, depth: int = 0) -> None:
    """A JSON Schema as far as providers read it: objects (or booleans), known types, object-valued
    properties, string-listed `required`, list-valued `enum`; bounded depth."""
    if isinstance(schema, bool):
        return
    if not isinstance(schema, dict):
        raise _bad(f"{where} must be a JSON Schema object", "tools")
    if depth > MAX_SCHEMA_DEPTH:
        raise _bad(f"{where} is nested deeper than {MAX_SCHEMA_DEPTH} levels", "tools")
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind] if kind is not None else []
    if not all(isinstance(k, str) and k in _JSON_TYPES for k in kinds):
        raise _bad(f"{where}.type must be one of {', '.join(sorted(_JSON_TYPES))}", "tools")
    props = schema.get("properties")
    if props is not None:
        if not isinstance(props, dict):
            raise _bad(f"{where}.properties must be an object", "tools")
        for name, prop in props.items():
            _check_schema(prop, f"{where}.properties.{name[:40]}", depth + 1)
    required = schema.get("required")
    if required is not None and not (isinstance(required, list) and all(isinstance(r, str) for r in required)):
        raise _bad(f"{where}.required must be a list of property names", "tools")
    if "enum" in schema and not isinstance(schema["enum"], list):
        raise _bad(f"{where}.enum must be a list", "tools")
    items = schema.get("items")
    for i, item in enumerate(items if isinstance(items, list) else [items] if items is not None else []):
        _check_schema(item, f"{where}.items" + (f"[{i}]" if isinstance(items, list) else ""), depth + 1)
    for union in ("anyOf", "oneOf", "allOf"):
        options = schema.get(union)
        if options is not None and not isinstance(options, list):
            raise _bad(f"{where}.{union} must be a list", "tools")
        for i, option in enumerate(options or []):
            _check_schema(option, f"{where}.{union}[{i}]", depth + 1)


def _tools_json(tools: Any) -> str:
    """The tools' JSON (the key of the cached checks and counts), after the cheap shape checks."""
    if not isinstance(tools, list):
        raise _bad("'tools' must be a list", "tools")
    if len(tools) > MAX_TOOLS:
        raise _bad(f"'tools' has {len(tools)} entries; at most {MAX_TOOLS} are accepted", "tools")
    try:
        text = json.dumps(tools, ensure_ascii=False)  # as sent: agents send the same tools in the same order
    except (RecursionError, ValueError):
        raise _bad(f"'tools' is nested deeper than {MAX_SCHEMA_DEPTH} levels", "tools") from None
    if len(text) > MAX_TOOLS_BYTES:
        raise _bad(f"'tools' is over {MAX_TOOLS_BYTES:,} bytes of JSON", "tools")
    return text


@functools.lru_cache(maxsize=256)
def _checked(tools_json: str) -> bool:
    """Check every tool of `tools_json` (GatewayError when one is wrong; only passing tool lists are cached:
    an agent sends the same tools on every call, and walking 20 schemas costs about a millisecond)."""
    for i, tool in enumerate(json.loads(tools_json)):
        if not isinstance(tool, dict) or not isinstance(tool.get("type"), str):
            raise _bad(f"tools[{i}] must be an object with a 'type'", "tools")
        if tool["type"] != "function":
            continue  # a provider's built-in tool: its own schema, counted as JSON
        fn = tool.get("function")
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not _NAME.match(fn["name"]):
            raise _bad(f"tools[{i}].function.name must be 1-128 letters, digits, '_', '-', '.' or ':'", "tools")
        if fn.get("description") is not None and not isinstance(fn["description"], str):
            raise _bad(f"tools[{i}].function.description must be a string", "tools")
        if fn.get("parameters") is not None:
            _check_schema(fn["parameters"], f"tools[{i}].function.parameters")
    return True


def _check_tools(tools: Any) -> str | None:
    """The checked tools' JSON, None without tools."""
    if tools is None:
        return None
    text = _tools_json(tools)
    _checked(text)
    return text


def _response_schema(body: dict[str, Any]) -> Any:
    fmt = body.get("response_format")
    if fmt is None:
        return None
    if not isinstance(fmt, dict) or not isinstance(fmt.get("type"), str):
        raise _bad("'response_format' must be an object with a 'type'", "response_format")
    if fmt["type"] == "json_schema":
        spec = fmt.get("json_schema")
        if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
            raise _bad("'response_format.json_schema' must be an object with a 'name'", "response_format")
        if spec.get("schema") is not None:
            _check_schema(spec["schema"], "response_format.json_schema.schema")
    return None if fmt["type"] == "text" else fmt


def check_chat_fields(body: dict[str, Any]) -> None:
    """Refuse (400) the fields the fit reads when the provider would refuse them; nothing is written yet."""
    _max_output(body)
    _check_tools(body.get("tools"))
    _response_schema(body)


@functools.lru_cache(maxsize=256)
def _tools_tokens_of(tools_json: str, model: str) -> int:
    """Tokens of tools given as their JSON: agents send the same tools on every call, and rendering and
    encoding 20 schemas costs milliseconds, so the count is kept per tools text and model."""
    return tools_tokens(json.loads(tools_json), model=model or None)


def chat_needs(body: dict[str, Any], model: str, ratio: float = 1.0) -> RequestNeeds:
    """The request's tools, response schema and max output, in our tokens (fields already checked)."""
    tools = _check_tools(body.get("tools"))
    counted = _tools_tokens_of(tools, model) if tools and tools != "[]" else 0
    return RequestNeeds(tools=counted,
                        schema=schema_tokens(_response_schema(body), model=model or None),
                        max_output=_max_output(body), ratio=ratio)
