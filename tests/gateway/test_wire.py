"""Request parsing and OpenAI error JSON (pure)."""
from __future__ import annotations

import json

import pytest

from flows.gateway.sse import Assembler, EventSplitter, event_data
from flows.gateway.wire import GatewayError, error_body, parse_chat_request, storable, wire_message


def _body(**fields: object) -> bytes:
    return json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}], **fields}).encode()


def test_it_keeps_the_raw_body_and_passes_unknown_fields_through() -> None:
    raw = _body(temperature=0.2, tools=[], x_vendor=1)
    request = parse_chat_request(raw)
    assert request.raw == raw and request.body["x_vendor"] == 1 and not request.stream


@pytest.mark.parametrize("raw,code", [
    (b"\xff", "invalid_json"), (b"1", "invalid_json"), (_body(model=""), "invalid_model"),
    (_body(messages="hi"), "invalid_messages"), (_body(stream="yes"), "invalid_stream"),
    (_body(stream_options=3), "invalid_stream_options"), (_body(messages=[3]), "invalid_message"),
])
def test_malformed_bodies_are_400_with_a_code(raw: bytes, code: str) -> None:
    with pytest.raises(GatewayError) as caught:
        parse_chat_request(raw)
    assert caught.value.status == 400 and caught.value.code == code
    assert json.loads(caught.value.payload())["error"]["code"] == code


def test_sdk_nulls_are_dropped_and_developer_reads_as_system() -> None:
    assert storable({"role": "assistant", "content": "x", "refusal": None, "audio": None, "tool_calls": []}, 0) == \
        {"role": "assistant", "content": "x"}
    assert storable({"role": "developer", "content": "rules"}, 0) == {"role": "system", "content": "rules"}


def test_error_body_has_the_openai_shape() -> None:
    assert set(json.loads(error_body("m", "t", "c"))["error"]) >= {"message", "type", "code"}


def test_events_split_across_chunks_come_out_whole_and_byte_exact() -> None:
    splitter = EventSplitter()
    assert splitter.feed(b'data: {"a"') == []
    assert splitter.feed(b': 1}\n\ndata: [DO') == [b'data: {"a": 1}\n\n']
    assert splitter.feed(b"NE]\n\n") == [b"data: [DONE]\n\n"]
    assert event_data(b": keep-alive\n\n") is None


def test_the_answer_is_assembled_from_content_and_tool_call_deltas() -> None:
    assembler = Assembler()
    chunks = [{"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hel"}}]},
              {"choices": [{"index": 0, "delta": {"content": "lo"}}]},
              {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c1", "function":
                                                                  {"name": "run", "arguments": '{"a"'}}]}}]},
              {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": ":1}"}}]},
                            "finish_reason": "tool_calls"}]},
              {"choices": [], "usage": {"prompt_tokens": 5}}]
    for chunk in chunks:
        assembler.feed(json.dumps(chunk))
    assembler.feed("[DONE]")
    assert assembler.done and assembler.usage == {"prompt_tokens": 5}
    assert assembler.message() == {"role": "assistant", "content": "Hello", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "run", "arguments": '{"a":1}'}}]}


def test_a_mid_stream_error_chunk_is_an_error() -> None:
    with pytest.raises(ValueError):
        Assembler().feed(json.dumps({"error": {"message": "overloaded"}}))


def test_a_later_system_or_developer_message_is_stored_as_a_user_message_marked_with_its_role() -> None:
    first = storable({"role": "developer", "content": "rules"}, 0)
    later = storable({"role": "developer", "content": "now in JSON"}, 3)
    assert first == {"role": "system", "content": "rules"}
    assert later == {"role": "user", "content": "now in JSON", "original_role": "developer"}
    assert wire_message(later) == {"role": "user", "content": "now in JSON"}
    assert wire_message({"role": "assistant", "content": "a", "reasoning": "r"}) == {"role": "assistant",
                                                                                     "content": "a"}
