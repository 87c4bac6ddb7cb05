"""Tool schemas as an OpenAI model reads them, so their tokens are counted the way the provider counts them.

OpenAI does not send a model the JSON of a request's `tools`: function schemas are rendered into the system
prompt as a TypeScript-like namespace (a `// description` comment, then `type name = (_: { param: type, })
=> any;`), which costs far fewer tokens than the JSON (no quotes, no `"type":` keys). Counting the JSON
over-counts a 20-tool request by roughly a third, enough to compact a chain that fits. The rendering below is
our own reading of that public format (described in OpenAI's community forum and reproduced by several
open-source token counters); `bench/tools_tokens.py` measures it against a provider's reported usage.

What cannot be rendered (built-in tools such as `web_search`, a function without a name) is counted as its
JSON: over-counting compacts a little early, under-counting overflows.
"""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["render_functions", "split_tools", "FUNCTIONS_FRAMING_TOKENS", "MAX_RENDER_DEPTH"]

FUNCTIONS_FRAMING_TOKENS = 9  # the "# Tools / ## functions" header around the namespace, as providers report it
MAX_RENDER_DEPTH = 12  # deeper schemas are rendered as `any` below this level (their JSON is never that deep)
_DESCRIBED_LEVELS = 2  # property descriptions are shown for the first two levels only


def split_tools(tools: Sequence[Any]) -> tuple[list[Mapping[str, Any]], list[Any]]:
    """(function definitions the namespace renders, everything else as it came)."""
    functions: list[Mapping[str, Any]] = []
    others: list[Any] = []
    for tool in tools:
        fn = tool.get("function") if isinstance(tool, Mapping) and tool.get("type") == "function" else None
        if isinstance(fn, Mapping) and isinstance(fn.get("name"), str) and fn["name"]:
            functions.append(fn)
        else:
            others.append(tool)
    return functions, others


def render_functions(functions: Sequence[Mapping[str, Any]]) -> str:
    """The namespace text of the function definitions (name, description, parameters)."""
    lines = ["namespace functions {", ""]
    for fn in functions:
        description = fn.get("description")
        if isinstance(description, str) and description:
            lines.extend(f"// {line}" for line in description.splitlines() or [""])
        params = fn.get("parameters")
        props = params.get("properties") if isinstance(params, Mapping) else None
        if isinstance(props, Mapping) and props:
            lines.append(f"type {fn['name']} = (_: {{")
            lines.extend(_properties(params, 0))  # type: ignore[arg-type]  # a Mapping: props came from it
            lines.append("}) => any;")
        else:
            lines.append(f"type {fn['name']} = () => any;")
        lines.append("")
    lines.append("} // namespace functions")
    return "\n".join(lines)


def _properties(schema: Mapping[str, Any], indent: int) -> list[str]:
    listed = schema.get("required")
    required: list[Any] = listed if isinstance(listed, list) else []
    out: list[str] = []
    props = schema.get("properties")
    for name, prop in (props.items() if isinstance(props, Mapping) else []):
        prop = prop if isinstance(prop, Mapping) else {}
        description = prop.get("description")
        if isinstance(description, str) and description and indent < _DESCRIBED_LEVELS * 2:
            out.extend(" " * indent + f"// {line}" for line in description.splitlines() or [""])
        mark = "" if name in required else "?"
        out.append(" " * indent + f"{name}{mark}: {_type(prop, indent)},")
    return out


def _type(schema: Mapping[str, Any], indent: int) -> str:
    if indent // 2 >= MAX_RENDER_DEPTH:
        return "any"
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return " | ".join(json.dumps(v, ensure_ascii=False) for v in enum)
    for union in ("anyOf", "oneOf"):
        options = schema.get(union)
        if isinstance(options, list) and options:
            return " | ".join(_type(o if isinstance(o, Mapping) else {}, indent) for o in options)
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(_type({**schema, "type": k}, indent) for k in kind) or "any"
    if kind in ("number", "integer"):
        return "number"
    if kind in ("string", "boolean", "null"):
        return str(kind)
    if kind == "array":
        items = schema.get("items")
        return f"{_type(items, indent)}[]" if isinstance(items, Mapping) else "any[]"
    if kind == "object" or isinstance(schema.get("properties"), Mapping):
        inner = _properties(schema, indent + 2)
        return "{\n" + "\n".join(inner) + "\n" + " " * indent + "}" if inner else "object"
    return "any"
