"""Request parsing and OpenAI error JSON (pure)."""
from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flows.gateway.sse import Assembler, EventSplitter, event_data
from flows.gateway.wire import GatewayError, error_body, parse_chat_request, storable, wire_message, with_model


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
    (b"[" * 5000 + b"]" * 5000, "invalid_json"), (b'{"model": "m", "n": ' + b"9" * 5000 + b"}", "invalid_json"),
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


@given(st.dictionaries(st.text(max_size=8), st.recursive(st.none() | st.text(max_size=10) | st.integers(),
                                                          lambda inner: st.lists(inner, max_size=3)
                                                          | st.dictionaries(st.text(max_size=8), inner, max_size=3),
                                                          max_leaves=8), max_size=4),
       st.text(min_size=1, max_size=20), st.booleans())
def test_splicing_the_model_changes_exactly_the_top_level_model(extra: dict[str, Any], model: str,
                                                                  pretty: bool) -> None:
    body = {**extra, "model": "prov/" + model}
    raw = json.dumps(body, indent=2 if pretty else None, ensure_ascii=False).encode()
    spliced = with_model(raw, "prov/" + model, model)
    if spliced is not None:  # refused only when another "model" key exists somewhere
        assert json.loads(spliced) == {**body, "model": model}
        old_token, new_token = (json.dumps(v, ensure_ascii=False).encode() for v in ("prov/" + model, model))
        assert len(spliced) == len(raw) - len(old_token) + len(new_token)  # only the value's bytes changed
    else:
        assert raw.count(b'"model"') > 1


def test_a_nested_model_key_is_left_alone() -> None:
    raw = b'{"metadata": {"model": "prov/m"}, "model": "prov/m"}'
    assert with_model(raw, "prov/m", "m") is None
    assert with_model(b'{"model" : "prov/m", "x": 1}', "prov/m", "m") == b'{"model" : "m", "x": 1}'
