"""The Responses wire format of the gateway: requests parsed and rebuilt, answers read, ids renamed (no server)."""
from __future__ import annotations

import json

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from flows.gateway.responses_wire import (
    answer_message,
    conversation,
    parse_responses_request,
    response_object,
    upstream_json,
    with_ids,
    with_previous,
)
from flows.gateway.wire import GatewayError

REASONING = {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "think"}],
             "encrypted_content": "b3BhcXVl.c2VhbGVk+/=="}
CALL = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "shell", "arguments": '{"cmd":"id"}',
        "status": "completed"}
OUTPUT = {"type": "function_call_output", "call_id": "call_1", "output": "uid=0(root)"}


def _request(**body: object) -> bytes:
    return json.dumps({"model": "gpt-5", "input": "scan", **body}).encode()


@pytest.mark.parametrize("body, code", [
    (b"{not json", "invalid_json"), (b"[1]", "invalid_json"),
    (json.dumps({"input": "x"}).encode(), "invalid_model"),
    (json.dumps({"model": "m"}).encode(), "invalid_input"),
    (json.dumps({"model": "m", "input": []}).encode(), "invalid_input"),
    (_request(stream="yes"), "invalid_stream"), (_request(store=1), "invalid_store"),
    (_request(previous_response_id=7), "invalid_previous_response_id"),
    (_request(instructions=["a"]), "invalid_instructions"), (_request(tools={}), "invalid_tools"),
])
def test_a_malformed_request_is_a_400_naming_the_field(body: bytes, code: str) -> None:
    with pytest.raises(GatewayError) as info:
        parse_responses_request(body)
    assert info.value.status == 400 and info.value.code == code


def test_an_output_whose_call_was_never_issued_is_a_400() -> None:
    request = parse_responses_request(_request(input=[{"role": "user", "content": "x"}, OUTPUT]))
    with pytest.raises(GatewayError, match="never issued") as info:
        conversation(request, [])
    assert info.value.code == "invalid_input"


def test_a_stateless_request_is_its_instructions_and_items_with_unknown_items_kept() -> None:
    unknown = {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"query": "cve"}}
    items = [{"role": "user", "content": "scan"}, REASONING, CALL, OUTPUT, unknown]
    request = parse_responses_request(_request(instructions="be brief", input=items, store=False))
    messages = conversation(request, [])
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool"]
    assert messages[2]["reasoning"]["signature"] == REASONING["encrypted_content"]
    assert not request.stored and request.previous_id is None
    rebuilt = json.loads(upstream_json(request, "gpt-5", messages))
    assert rebuilt["instructions"] == "be brief" and rebuilt["input"] == items  # every item back as it came


def test_a_continuing_request_answers_the_stored_calls_and_its_instructions_replace_the_old_ones() -> None:
    history = [{"role": "system", "content": "old rules"}, {"role": "user", "content": "scan"},
               {"role": "assistant", "content": None,
                "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "shell",
                                                                                  "arguments": "{}"}}]}]
    request = parse_responses_request(_request(instructions="new rules", input=[OUTPUT],
                                               previous_response_id="resp_ours"))
    messages = conversation(request, history)
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool"]
    assert messages[0]["content"] == "new rules" and request.previous_id == "resp_ours"
    assert conversation(parse_responses_request(_request(input=[OUTPUT])), history)[0]["content"] == "old rules"


def test_a_developer_item_continuing_a_conversation_is_user_input_not_a_second_system_message() -> None:
    history = [{"role": "user", "content": "scan"}, {"role": "assistant", "content": "done"}]
    request = parse_responses_request(_request(input=[{"role": "developer", "content": "JSON from now"}]))
    assert [m["role"] for m in conversation(request, history)] == ["user", "assistant", "user"]


def test_observe_forwards_the_agents_bytes_and_manage_sends_the_view_without_previous_response_id() -> None:
    raw = b'{"model" :  "work/gpt-5", "input": "scan",  "previous_response_id": "resp_x", "x_vendor": 1}'
    request = parse_responses_request(raw)
    assert upstream_json(request, "work/gpt-5", None) == raw
    assert upstream_json(request, "gpt-5", None) == raw.replace(b'"work/gpt-5"', b'"gpt-5"')
    sent = json.loads(upstream_json(request, "gpt-5", [{"role": "system", "content": "s"},
                                                      {"role": "user", "content": "<summary>x</summary>"}]))
    assert "previous_response_id" not in sent and sent["x_vendor"] == 1
    assert sent["instructions"] == "s" and sent["input"][0]["content"] == "<summary>x</summary>"
    assert with_previous(raw, "resp_theirs") == raw.replace(b'"resp_x"', b'"resp_theirs"')
    assert with_previous(b'{"input": "x"}', "resp_theirs") is None


def test_an_answer_is_one_assistant_message_with_its_encrypted_reasoning() -> None:
    answer = answer_message({"output": [REASONING, CALL]})
    assert answer is not None and answer["role"] == "assistant"
    assert answer["tool_calls"][0]["id"] == "call_1" and answer["reasoning"]["signature"] == REASONING[
        "encrypted_content"]
    assert answer_message({"output": []}) is None
    assert answer_message({"output": [{"role": "user", "content": "x"}]}) is None


def test_an_answer_that_is_not_a_response_object_is_a_502() -> None:
    for raw in (b"<html>", b'{"choices": []}', b'{"object": "response", "id": "r", "output": {}}'):
        with pytest.raises(GatewayError) as info:
            response_object(raw)
        assert info.value.status == 502 and info.value.code == "upstream_garbage"


_ID = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_", min_size=8, max_size=40).map("resp_".__add__)


@given(_ID, st.text(max_size=200))
def test_renaming_ids_replaces_the_id_and_leaves_every_other_string_alone(theirs: str, text: str) -> None:
    assume(text != theirs)
    raw = json.dumps({"id": theirs, "previous_response_id": theirs, "text": text}).encode()
    renamed = json.loads(with_ids(raw, {theirs: "resp_ours"}))
    assert renamed == {"id": "resp_ours", "previous_response_id": "resp_ours", "text": text}
