"""The protocol layer (pure): each wire format's request, extra tokens, upstream body, errors and stream reading."""
from __future__ import annotations

import json

import pytest

from flows.gateway.protocols import CHAT, ExtraTokens
from flows.gateway.wire import GatewayError

TOOL = {"type": "function", "function": {"name": "terminal", "description": "run a shell command",
                                         "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}}}


def _chat(**fields: object) -> bytes:
    return json.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}], **fields}).encode()


def test_chat_reports_the_tool_schemas_and_the_reserved_output_as_extra_tokens() -> None:
    bare = CHAT.extra_tokens(CHAT.parse(_chat(), {}, ""))
    tooled = CHAT.extra_tokens(CHAT.parse(_chat(tools=[TOOL], max_completion_tokens=700), {}, ""))
    assert bare == ExtraTokens(tools=0, reserve=None)
    assert tooled.tools > 10 and tooled.reserve == 700
    assert CHAT.extra_tokens(CHAT.parse(_chat(max_tokens=300), {}, "")).reserve == 300
    assert CHAT.extra_tokens(CHAT.parse(_chat(max_tokens=True), {}, "")).reserve is None


def test_chat_observe_sends_the_agents_bytes_and_only_splices_a_changed_model() -> None:
    raw = _chat(temperature=0.25)
    request = CHAT.parse(raw, {}, "")
    assert CHAT.upstream_body(request, "gpt-4o", None) == raw
    assert CHAT.upstream_body(request, "gpt-4.1", None) == raw.replace(b'"gpt-4o"', b'"gpt-4.1"')


def test_chat_manage_rebuilds_the_messages_and_asks_for_the_usage_chunk() -> None:
    request = CHAT.parse(_chat(stream=True), {}, "")
    view = [{"role": "user", "content": "<summary>x</summary>", "reasoning": {"content": "r"}}]
    body = json.loads(CHAT.upstream_body(request, "gpt-4o", view, manage=True))
    assert body["messages"] == [{"role": "user", "content": "<summary>x</summary>"}]
    assert body["stream_options"] == {"include_usage": True}
    retried = json.loads(CHAT.upstream_body(request, "gpt-4o", view, manage=False))
    assert "stream_options" not in retried


def test_chat_stream_reader_hides_the_usage_chunk_only_the_gateway_asked_for() -> None:
    chunks = [b'data: {"choices":[{"index":0,"delta":{"content":"Hel"}}]}\n\n',
              b'data: {"choices":[{"index":0,"delta":{"content":"lo"}}]}\n\ndata: {"choices":[],"usage":{"total_'
              b'tokens":5}}\n\n', b"data: [DONE]\n\n"]
    reader = CHAT.stream_reader(CHAT.parse(_chat(stream=True), {}, ""), manage=True)
    passed = [event for chunk in chunks for event in reader.feed(chunk)]
    assert len(passed) == 3 and all(b"usage" not in e for e in passed)
    result = reader.result()
    assert result.answer == {"role": "assistant", "content": "Hello"} and result.usage == {"total_tokens": 5}
    assert reader.text() == "Hello"


def test_chat_stream_cut_before_done_has_no_answer_and_says_why() -> None:
    reader = CHAT.stream_reader(CHAT.parse(_chat(stream=True), {}, ""), manage=False)
    reader.feed(b'data: {"choices":[{"index":0,"delta":{"content":"Hel"}}]}\n\n')
    result = reader.result()
    assert result.answer is None and "[DONE]" in result.error
    assert json.loads(CHAT.stream_error(result.error)[6:])["error"]["code"] == "upstream_stream_broken"


@pytest.mark.parametrize("raw,passed", [(b'{"error": {"message": "quota", "type": "x"}}', True),
                                        (b"<html>502</html>", False)])
def test_chat_upstream_errors_pass_through_when_they_are_openai_json(raw: bytes, passed: bool) -> None:
    exc = CHAT.upstream_error(429, raw)
    assert exc.status == 429 and (CHAT.error_body(exc) == raw) is passed
    assert "error" in json.loads(CHAT.error_body(exc))


def test_chat_answer_that_is_not_a_completion_is_a_502() -> None:
    with pytest.raises(GatewayError) as caught:
        CHAT.answer(b'{"choices": []}')
    assert caught.value.status == 502 and caught.value.code == "upstream_garbage"
