"""Token counts of whole Anthropic / Responses requests: system, messages, tools and the reserved output."""
from __future__ import annotations

import pytest

from summarizer.formats.common import FormatError
from summarizer.formats.request_tokens import request_tokens
from summarizer.tokens.count import count_tokens, message_tokens, text_tokens, tools_tokens

SCHEMA = {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]}
CHAT_TOOLS = [{"type": "function", "function": {"name": "terminal", "description": "run a command",
                                                 "parameters": SCHEMA}}]
ANTHROPIC_TOOLS = [{"name": "terminal", "description": "run a command", "input_schema": SCHEMA}]
RESPONSES_TOOLS = [{"type": "function", "name": "terminal", "description": "run a command", "parameters": SCHEMA,
                    "strict": None}]
ANTHROPIC = {"model": "claude-sonnet-4-6", "max_tokens": 4096, "system": "You are a pentester.",
             "tools": ANTHROPIC_TOOLS, "messages": [{"role": "user", "content": "scan 10.0.0.5"}]}


def test_an_anthropic_request_counts_system_messages_tools_and_max_tokens():
    tokens = request_tokens(ANTHROPIC, "anthropic")
    assert tokens.system == message_tokens({"role": "system", "content": "You are a pentester."})
    assert tokens.system + tokens.messages == count_tokens([{"role": "system", "content": "You are a pentester."},
                                                            {"role": "user", "content": "scan 10.0.0.5"}])
    assert tokens.tools == tools_tokens(CHAT_TOOLS) > 0
    assert (tokens.max_output, tokens.total) == (4096, tokens.prompt + 4096)
    assert tokens.estimate is True  # Claude's tokenizer is not tiktoken's


def test_the_same_tools_cost_the_same_in_both_wire_shapes_and_in_chat_completions():
    responses = {"model": "gpt-4o", "input": "scan 10.0.0.5", "tools": RESPONSES_TOOLS, "max_output_tokens": 500}
    tokens = request_tokens(responses, "responses")
    assert tokens.tools == request_tokens(ANTHROPIC, "anthropic", model="gpt-4o").tools == \
        tools_tokens(CHAT_TOOLS, model="gpt-4o")
    assert (tokens.max_output, tokens.estimate) == (500, False)


def test_blocks_without_a_counterpart_and_reasoning_text_are_counted_too():
    document = {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "word " * 400}}
    with_doc = {**ANTHROPIC, "messages": [{"role": "user", "content": [document, {"type": "text", "text": "sum"}]}]}
    plain = {**ANTHROPIC, "messages": [{"role": "user", "content": [{"type": "text", "text": "sum"}]}]}
    assert request_tokens(with_doc, "anthropic").messages - request_tokens(plain, "anthropic").messages >= 400
    thought = "long deliberation " * 50
    turns = [{"role": "user", "content": "q"}, {"role": "assistant", "content": [
        {"type": "thinking", "thinking": thought, "signature": "c2ln"}, {"type": "text", "text": "a"}]}]
    assert request_tokens({**ANTHROPIC, "messages": turns}, "anthropic").messages >= text_tokens(thought)


def test_a_responses_request_counts_instructions_as_system_and_built_in_items_as_json():
    body = {"model": "gpt-4o", "instructions": "Be terse.", "input": [
        {"role": "user", "content": "q"},
        {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"query": "x " * 100}}]}
    tokens = request_tokens(body, "responses")
    assert tokens.system == message_tokens({"role": "system", "content": "Be terse."}, model="gpt-4o")
    assert tokens.messages > 100 and tokens.max_output == 0


def test_an_invalid_request_or_wire_is_a_format_error():
    with pytest.raises(FormatError, match="never issued"):
        request_tokens({"input": [{"type": "function_call_output", "call_id": "x", "output": ""}]}, "responses")
    with pytest.raises(FormatError, match="unknown wire format"):
        request_tokens(ANTHROPIC, "gemini")
