"""The Chat Completions fields the fit reads: validated (a clear 400) and counted with our tokenizer."""
from __future__ import annotations

from typing import Any

import pytest

from flows.engine import tools_tokens
from flows.gateway.request_needs import MAX_TOOLS, chat_needs, check_chat_fields
from flows.gateway.wire import GatewayError
from tests.gateway.tool_schemas import tool_schemas

FN = {"type": "function", "function": {"name": "scan", "parameters": {"type": "object", "properties": {
    "host": {"type": "string"}}, "required": ["host"]}}}


def test_the_needs_count_tools_schema_and_the_newer_output_field_first() -> None:
    body = {"tools": [FN], "max_tokens": 100, "max_completion_tokens": 50,
            "response_format": {"type": "json_schema", "json_schema": {"name": "r", "schema": {"type": "object"}}}}
    needs = chat_needs(body, "gpt-4o", ratio=1.1)
    assert needs.tools == tools_tokens([FN], model="gpt-4o") and needs.schema > 0
    assert needs.max_output == 50 and needs.ratio == 1.1 and needs.extra == needs.tools + needs.schema


def test_a_text_response_format_and_no_tools_need_nothing() -> None:
    needs = chat_needs({"response_format": {"type": "text"}}, "gpt-4o")
    assert (needs.tools, needs.schema, needs.max_output) == (0, 0, None)


BAD: list[tuple[str, dict[str, Any]]] = [
    ("max_tokens", {"max_tokens": 0}), ("max_tokens", {"max_tokens": -1}), ("max_tokens", {"max_tokens": "9"}),
    ("max_tokens", {"max_tokens": 10**9}), ("max_tokens", {"max_tokens": 1.5}),
    ("max_completion_tokens", {"max_completion_tokens": False}),
    ("tools", {"tools": "scan"}), ("tools", {"tools": [1]}), ("tools", {"tools": [{"function": {}}]}),
    ("tools", {"tools": [{"type": "function", "function": {"name": ""}}]}),
    ("tools", {"tools": [{"type": "function", "function": {"name": "a b"}}]}),
    ("tools", {"tools": [{"type": "function", "function": {"name": "a", "description": 3}}]}),
    ("tools", {"tools": [{"type": "function", "function": {"name": "a", "parameters": "object"}}]}),
    ("tools", {"tools": [{"type": "function", "function": {"name": "a", "parameters": {"type": 4}}}]}),
    ("tools", {"tools": [{"type": "function", "function": {"name": "a", "parameters": {
        "type": "object", "properties": {"x": {"type": "object", "required": "x"}}}}}]}),
    ("tools", {"tools": [{"type": "function", "function": {"name": "a", "parameters": {"enum": "x"}}}]}),
    ("tools", {"tools": [{"type": "function", "function": {"name": "a", "parameters": {"anyOf": {}}}}]}),
    ("tools", {"tools": [FN] * (MAX_TOOLS + 1)}),
    ("tools", {"tools": [{"type": "function", "function": {"name": "a", "description": "x" * 2_000_000}}]}),
    ("response_format", {"response_format": "json"}),
    ("response_format", {"response_format": {"type": "json_schema", "json_schema": {"schema": {}}}}),
]


@pytest.mark.parametrize("field, body", BAD, ids=[f"{f}-{i}" for i, (f, _) in enumerate(BAD)])
def test_a_field_the_provider_would_refuse_is_a_400_naming_it(field: str, body: dict[str, Any]) -> None:
    with pytest.raises(GatewayError) as raised:
        check_chat_fields(body)
    assert raised.value.status == 400 and field in raised.value.message


def test_a_deeply_nested_schema_is_refused_not_recursed_into() -> None:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(5000):
        schema = {"type": "array", "items": schema}
    with pytest.raises(GatewayError, match="deeper"):
        check_chat_fields({"tools": [{"type": "function", "function": {"name": "a", "parameters": schema}}]})


def test_realistic_tools_and_built_in_tools_pass() -> None:
    check_chat_fields({"tools": [*tool_schemas(), {"type": "web_search_preview"}], "max_tokens": 4000})
