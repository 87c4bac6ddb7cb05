"""OpenAI Responses requests <-> our messages: exact round trips, the engine's edits, and clear errors."""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings

from summarizer.chain.messages import validate_messages
from summarizer.formats.convert import FormatError, import_chain
from summarizer.formats.responses import (
    messages_to_responses,
    messages_to_responses_output,
    responses_output_messages,
    responses_to_messages,
)
from tests.summarizer.strategies import chains
from tests.summarizer.wire_strategies import assert_converges, assert_lossless, responses_requests

ENCRYPTED = "gAAAAABo_encrypted+reasoning/blob=="
REASONING = {"type": "reasoning", "id": "rs_01", "summary": [{"type": "summary_text", "text": "scan first"}],
             "encrypted_content": ENCRYPTED}
REQUEST = {
    "instructions": "You are a pentest agent.",
    "input": [
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "sandbox: off"}]},
        {"role": "user", "content": "scan 10.0.0.5"},
        REASONING,
        {"type": "function_call", "call_id": "call_1", "name": "shell", "arguments": '{"cmd":"nmap 10.0.0.5"}'},
        {"type": "function_call", "call_id": "call_2", "name": "shell", "arguments": '{"cmd":"curl 10.0.0.5"}',
         "id": "fc_2", "status": "completed"},
        {"type": "function_call_output", "call_id": "call_2", "output": "<html>login</html>"},
        {"type": "function_call_output", "call_id": "call_1", "output": "22/tcp open ssh"},
        {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
         "content": [{"type": "output_text", "text": "A login page on port 80.", "annotations": []}]},
    ],
}


def round_trip(request: dict) -> dict:
    return messages_to_responses(json.loads(json.dumps(responses_to_messages(request))))


def test_items_map_onto_our_messages_calls_and_outputs_as_tool_calls_and_tool_messages():
    chain = responses_to_messages(REQUEST)
    assert [m["role"] for m in chain] == ["system", "user", "user", "assistant", "tool", "tool", "assistant"]
    assert chain[0] == {"role": "system", "content": "You are a pentest agent."}
    # a developer message after the instructions is read as input (one system message, first), its role kept
    assert chain[1]["content"] == [{"type": "text", "text": "sandbox: off"}]
    assert chain[1]["responses"]["items"][0]["role"] == "developer"
    assert [c["id"] for c in chain[3]["tool_calls"]] == ["call_1", "call_2"]
    assert chain[3]["reasoning"] == {"content": "scan first", "signature": ENCRYPTED}
    assert chain[4] == {"role": "tool", "tool_call_id": "call_2", "content": "<html>login</html>"}
    validate_messages(chain)


def test_a_request_goes_back_exactly_encrypted_reasoning_byte_for_byte():
    out = round_trip(REQUEST)
    assert out == REQUEST
    assert json.dumps(out["input"][2]) == json.dumps(REASONING)
    assert round_trip({"input": "hi"}) == {"input": "hi"}
    assert round_trip({"instructions": "be brief", "input": "hi"}) == {"instructions": "be brief", "input": "hi"}


@settings(max_examples=300, deadline=None)
@given(responses_requests())
def test_random_valid_requests_round_trip_exactly_and_validate(request):
    assert_lossless(request, "responses")


def test_a_shortened_output_keeps_its_item_and_cleared_reasoning_drops_the_reasoning_item():
    chain = responses_to_messages(REQUEST)
    chain[5] = {**chain[5], "content": "[truncated]"}
    chain[3] = {k: v for k, v in chain[3].items() if k != "reasoning"}
    items = messages_to_responses(chain)["input"]
    assert [i.get("type") for i in items[1:5]] == [None, "function_call", "function_call", "function_call_output"]
    assert items[5] == {"type": "function_call_output", "call_id": "call_1", "output": "[truncated]"}


def test_a_response_output_is_one_assistant_message_and_comes_back_as_the_same_items():
    output = [REASONING, {"type": "function_call", "call_id": "call_9", "name": "shell", "arguments": "{}",
                          "id": "fc_9", "status": "completed"}]
    messages = responses_output_messages(output)
    assert len(messages) == 1 and messages[0]["tool_calls"][0]["id"] == "call_9"
    assert messages_to_responses_output(messages) == output


def test_unknown_items_are_kept_where_they_stood():
    request = {"input": [{"type": "telepathy_call", "id": "tp_1"}, {"role": "user", "content": "q"},
                         {"type": "item_reference", "id": "msg_7"}, {"role": "assistant", "content": "a"}]}
    assert round_trip(request) == request
    assert [m["role"] for m in responses_to_messages(request)] == ["user", "assistant"]


@settings(max_examples=150, deadline=None)
@given(chains())
def test_any_chain_exports_to_a_request_that_converts_back_to_the_same_request(chain):
    assert_converges(chain, "responses")


@pytest.mark.parametrize("request_, reason", [
    ({"input": [{"type": "function_call_output", "call_id": "call_x", "output": "?"}]}, "never issued"),
    ({"input": [{"type": "custom_tool_call_output", "call_id": "call_x", "output": "?"}]}, "never issued"),
    ({"input": [{"type": "function_call", "call_id": "", "name": "x", "arguments": "{}"}]}, "call_id"),
    ({"input": [{"type": "function_call", "call_id": "c", "name": "x", "arguments": {"a": 1}}]}, "arguments"),
    ({"input": [{"role": "wizard", "content": "q"}]}, "role must be one of"),
    ({"input": [{"content": "no role, no type"}]}, "needs a 'type'"),
    ({"input": [{"type": "reasoning", "id": "rs", "encrypted_content": 5}]}, "encrypted_content"),
    ({"instructions": ["a"], "input": []}, "'instructions' must be a string"),
    ({"input": {"role": "user"}}, "'input' must be"),
])
def test_invalid_requests_raise_a_format_error_saying_why(request_, reason):
    with pytest.raises(FormatError, match=reason):
        import_chain(request_, "responses")


def test_input_continuing_a_stored_conversation_answers_its_calls_and_is_not_first():
    items = [{"type": "function_call_output", "call_id": "call_x", "output": "22/tcp open"},
             {"role": "developer", "content": "JSON only"}]
    messages = responses_to_messages({"input": items}, issued=["call_x"], first=False)
    assert [m["role"] for m in messages] == ["tool", "user"]
    assert messages[0]["tool_call_id"] == "call_x"
    assert responses_to_messages({"input": items[1:]})[0]["role"] == "system"  # alone and first: the system
    with pytest.raises(FormatError, match="never issued"):
        responses_to_messages({"input": items}, issued=["call_y"], first=False)
