"""Tool schemas are counted as the provider renders them for the model, not as their JSON."""
from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from summarizer import text_tokens, tools_tokens
from summarizer.tokens.function_schemas import FUNCTIONS_FRAMING_TOKENS, render_functions, split_tools
from tests.gateway.tool_schemas import tool_schemas

WEATHER = {"name": "get_weather", "description": "Weather of a city",
           "parameters": {"type": "object", "required": ["city"], "properties": {
               "city": {"type": "string", "description": "City name"},
               "unit": {"type": "string", "enum": ["c", "f"]},
               "days": {"type": "array", "items": {"type": "integer"}},
               "where": {"type": "object", "properties": {"lat": {"type": "number"}}}}}}


def test_a_function_renders_as_a_typed_signature_with_its_descriptions() -> None:
    text = render_functions([WEATHER])
    assert text.splitlines() == [
        "namespace functions {", "", "// Weather of a city", "type get_weather = (_: {", "// City name",
        "city: string,", 'unit?: "c" | "f",', "days?: number[],", "where?: {", "  lat?: number,", "},",
        "}) => any;", "", "} // namespace functions"]


def test_a_function_without_parameters_takes_none() -> None:
    assert "type ping = () => any;" in render_functions([{"name": "ping"}])


def test_built_in_tools_and_nameless_functions_are_counted_as_json() -> None:
    builtin = {"type": "web_search_preview"}
    functions, others = split_tools([{"type": "function", "function": WEATHER}, builtin,
                                     {"type": "function", "function": {"description": "no name"}}])
    assert [f["name"] for f in functions] == ["get_weather"] and len(others) == 2
    assert tools_tokens([builtin]) > text_tokens(json.dumps([builtin])) > 0


def test_twenty_realistic_tools_cost_far_less_than_their_json() -> None:
    tools = tool_schemas()
    rendered = tools_tokens(tools, model="gpt-4o")
    assert rendered == FUNCTIONS_FRAMING_TOKENS + text_tokens(render_functions([t["function"] for t in tools]),
                                                              model="gpt-4o")
    assert rendered < 0.75 * text_tokens(json.dumps(tools), model="gpt-4o")


_SCHEMAS: Any = st.recursive(
    st.fixed_dictionaries({"type": st.sampled_from(["string", "integer", "boolean", "null", "weird"])}),
    lambda inner: st.one_of(
        st.fixed_dictionaries({"type": st.just("array"), "items": inner}),
        st.fixed_dictionaries({"type": st.just("object"), "properties": st.dictionaries(
            st.text("abc_", min_size=1, max_size=5), inner, max_size=3)}),
        st.fixed_dictionaries({"anyOf": st.lists(inner, min_size=1, max_size=3)})),
    max_leaves=12)


@given(_SCHEMAS)
def test_any_schema_renders_and_more_parameters_never_cost_less(schema: Any) -> None:
    one = {"name": "f", "parameters": {"type": "object", "properties": {"a": schema}}}
    two = {"name": "f", "parameters": {"type": "object", "properties": {"a": schema, "b": schema}}}
    assert render_functions([one]).endswith("} // namespace functions")
    assert text_tokens(render_functions([two])) >= text_tokens(render_functions([one]))
