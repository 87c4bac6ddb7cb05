"""Anthropic Messages requests <-> our messages: exact round trips, the engine's edits, and clear errors."""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings

from summarizer.chain.messages import content_text, validate_messages
from summarizer.formats.anthropic import (
    anthropic_response_content,
    anthropic_response_message,
    anthropic_to_messages,
    messages_to_anthropic,
)
from summarizer.formats.convert import FormatError, detect_format, import_chain
from tests.summarizer.strategies import chains
from tests.summarizer.wire_strategies import anthropic_requests, assert_converges, assert_lossless

THINKING = {"type": "thinking", "thinking": "nmap first", "signature": "EqQBCkYIAxgCKkDs0ig=="}
REQUEST = {
    "system": [{"type": "text", "text": "You are a pentester.", "cache_control": {"type": "ephemeral"}}],
    "messages": [
        {"role": "user", "content": "scan 10.0.0.5"},
        {"role": "assistant", "content": [
            THINKING, {"type": "text", "text": "Scanning."},
            {"type": "tool_use", "id": "toolu_01", "name": "terminal", "input": {"cmd": "nmap 10.0.0.5"}},
            {"type": "tool_use", "id": "toolu_02", "name": "browser", "input": {"url": "http://10.0.0.5"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_01", "content": "22/tcp open ssh"},
            {"type": "tool_result", "tool_use_id": "toolu_02", "content": [{"type": "text", "text": "<h1>x</h1>"}],
             "is_error": True, "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": "and check port 80"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Port 80 serves a login page."}]},
    ],
}


def round_trip(request: dict) -> dict:
    stored = json.loads(json.dumps(anthropic_to_messages(request)))  # what Message rows give back
    return messages_to_anthropic(stored)


def test_a_request_maps_onto_our_messages_tool_results_as_tool_messages():
    chain = anthropic_to_messages(REQUEST)
    assert [m["role"] for m in chain] == ["system", "user", "assistant", "tool", "tool", "user", "assistant"]
    assistant = chain[2]
    assert [c["id"] for c in assistant["tool_calls"]] == ["toolu_01", "toolu_02"]
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {"cmd": "nmap 10.0.0.5"}
    assert assistant["reasoning"] == {"content": "nmap first", "signature": THINKING["signature"]}
    assert chain[3] == {"role": "tool", "tool_call_id": "toolu_01", "content": "22/tcp open ssh"}
    assert chain[4]["content"] == [{"type": "text", "text": "<h1>x</h1>"}]
    assert chain[4]["anthropic"]["blocks"][0]["is_error"] is True  # kept for the way back
    assert content_text(chain[5]) == "and check port 80"
    validate_messages(chain)


def test_one_user_turn_of_several_results_and_text_goes_back_as_one_turn_in_its_order():
    assert round_trip(REQUEST) == REQUEST
    interleaved = {"messages": [*REQUEST["messages"][:2], {"role": "user", "content": [
        {"type": "text", "text": "first"}, REQUEST["messages"][2]["content"][1],
        {"type": "text", "text": "between"}, REQUEST["messages"][2]["content"][0]]}]}
    assert round_trip(interleaved) == interleaved


def test_thinking_blocks_go_back_unmodified_with_their_signatures():
    out = round_trip(REQUEST)
    assert out["messages"][1]["content"][0] == THINKING
    redacted = {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": [
        {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"}, {"type": "text", "text": "a"}]}]}
    assert round_trip(redacted) == redacted


@settings(max_examples=300, deadline=None)
@given(anthropic_requests())
def test_random_valid_requests_round_trip_exactly_and_validate(request):
    assert_lossless(request, "anthropic")


def test_a_result_the_engine_shortened_keeps_its_error_flag_and_cache_marker():
    chain = anthropic_to_messages(REQUEST)
    chain[4] = {**chain[4], "content": [{"type": "text", "text": "[truncated]"}]}
    block = messages_to_anthropic(chain)["messages"][2]["content"][1]
    assert block == {"type": "tool_result", "tool_use_id": "toolu_02", "is_error": True,
                     "cache_control": {"type": "ephemeral"}, "content": [{"type": "text", "text": "[truncated]"}]}


def test_cleared_reasoning_drops_the_thinking_blocks_and_keeps_the_rest():
    chain = anthropic_to_messages(REQUEST)
    chain[2] = {k: v for k, v in chain[2].items() if k != "reasoning"}
    blocks = messages_to_anthropic(chain)["messages"][1]["content"]
    assert [b["type"] for b in blocks] == ["text", "tool_use", "tool_use"]


def test_a_summary_the_engine_inserted_goes_out_as_a_plain_user_turn():
    chain = anthropic_to_messages(REQUEST)
    view = [chain[0], {"role": "user", "content": "<summary>scanned 10.0.0.5</summary>"}, chain[6]]
    assert messages_to_anthropic(view) == {"system": REQUEST["system"], "messages": [
        {"role": "user", "content": "<summary>scanned 10.0.0.5</summary>"}, REQUEST["messages"][3]]}


@settings(max_examples=150, deadline=None)
@given(chains())
def test_any_chain_exports_to_a_request_that_converts_back_to_the_same_request(chain):
    assert_converges(chain, "anthropic")


def test_an_answer_is_one_assistant_message_and_its_blocks_come_back():
    answer = {"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-6",
              "content": REQUEST["messages"][1]["content"], "stop_reason": "tool_use", "usage": {"input_tokens": 9}}
    message = anthropic_response_message(answer)
    assert message == anthropic_to_messages({"messages": [REQUEST["messages"][1]]})[0]
    assert anthropic_response_content(message) == answer["content"]


def test_unknown_block_types_are_kept_verbatim():
    request = {"messages": [{"role": "user", "content": [{"type": "hologram_2031", "payload": {"z": [1]}},
                                                         {"type": "text", "text": "what is this?"}]}]}
    assert round_trip(request) == request
    assert anthropic_to_messages(request)[0]["content"] == [{"type": "text", "text": "what is this?"}]


def test_detection_knows_anthropic_by_its_system_or_its_own_blocks_and_leaves_openai_alone():
    assert detect_format(REQUEST) == "anthropic"
    assert detect_format({"messages": REQUEST["messages"]}) == "anthropic"
    assert detect_format({"messages": [{"role": "user", "content": "hi"}]}) == "openai"
    assert detect_format({"messages": [{"role": "user", "content": [
        {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}]}) == "openai"  # OpenRouter style


@pytest.mark.parametrize("request_, reason", [
    ({"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_x",
                                                  "content": "?"}]}]}, "never issued"),
    ({"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "hmm"}]}]}, "without its signature"),
    ({"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "hmm", "signature": ""}]}]}, "without its signature"),
    ({"messages": [{"role": "user", "content": [{"type": "tool_use", "id": "t", "name": "x", "input": {}}]}]},
     "belongs in an assistant turn"),
    ({"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": [
        {"type": "tool_use", "id": "t", "name": "x", "input": "ls"}]}]}, "must be an object"),
    ({"messages": [{"role": "robot", "content": "q"}]}, "role must be one of"),
    ({"messages": [{"role": "user", "content": 5}]}, "'content' must be"),
    ({"messages": [{"role": "user", "content": ["text"]}]}, "needs a 'type'"),
    ({"system": [{"type": "image", "source": {}}], "messages": []}, "text blocks only"),
    ({"model": "claude"}, "needs a 'messages' list"),
])
def test_invalid_requests_raise_a_format_error_saying_why(request_, reason):
    with pytest.raises(FormatError, match=reason):
        import_chain(request_, "anthropic")
