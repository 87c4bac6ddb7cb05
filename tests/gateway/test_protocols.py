"""The protocol layer (pure): each wire format's request, extra tokens, upstream body, errors and stream reading."""
from __future__ import annotations

import json

import pytest

from flows.gateway.protocols import ANTHROPIC, CHAT, ExtraTokens
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
    with pytest.raises(GatewayError) as refused:  # a cap the provider would refuse is ours to refuse first
        CHAT.parse(_chat(max_tokens=True), {}, "")
    assert refused.value.status == 400 and "max_tokens" in refused.value.message
    schema = {"type": "json_schema", "json_schema": {"name": "r", "schema": {"type": "object"}}}
    assert CHAT.extra_tokens(CHAT.parse(_chat(response_format=schema), {}, "")).schema > 0


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


def _anthropic(turns: list[object], **fields: object) -> bytes:
    return json.dumps({"model": "claude-x", "max_tokens": 900, "messages": turns, **fields}).encode()


SIGNED = {"type": "thinking", "thinking": "pick a port", "signature": "sig-from-upstream"}
OPEN_ROUND = [{"role": "user", "content": "scan"},
              {"role": "assistant", "content": [SIGNED, {"type": "tool_use", "id": "t1", "name": "sh", "input": {}}]},
              {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "22 open"}]}]


def test_anthropic_reads_tools_max_tokens_and_the_key_from_either_header() -> None:
    request = ANTHROPIC.parse(_anthropic(OPEN_ROUND, tools=[{"name": "sh", "input_schema": {"type": "object"}}]),
                              {"Anthropic-Version": "2023-06-01", "Anthropic-Beta": "b1"}, "beta=true")
    assert request.forward == {"anthropic-version": "2023-06-01", "anthropic-beta": "b1"}
    extra = ANTHROPIC.extra_tokens(request)
    assert extra.tools > 0 and extra.reserve == 900
    assert ANTHROPIC.api_key({"X-Api-Key": "pgw_1"}) == "pgw_1"
    assert ANTHROPIC.api_key({"Authorization": "Bearer pgw_2"}) == "pgw_2"


def test_anthropic_manage_keeps_signed_thinking_drops_rebuilt_and_marks_the_summary_for_caching() -> None:
    request = ANTHROPIC.parse(_anthropic(OPEN_ROUND, system=[{"type": "text", "text": "rules",
                                                              "cache_control": {"type": "ephemeral"}}]), {}, "")
    summary = {"role": "user", "content": "<summary>scanned 10.0.0.1</summary>"}
    old = {"role": "assistant", "content": "done", "reasoning": {"content": "x", "signature": "placeholder"}}
    view = [request.messages[0], summary, old, *request.messages[1:]]
    body = ANTHROPIC.rebuilt(request, "claude-x", view, manage=True)
    assert body["system"] == json.loads(request.raw)["system"] and body["max_tokens"] == 900
    turns = body["messages"]
    # what the gateway made (summary, older turns) ends with a breakpoint: the stable prefix
    assert turns[1]["content"] == [{"type": "text", "text": "done", "cache_control": {"type": "ephemeral"}}]
    assert turns[0] == summary  # and a rebuilt thinking block (placeholder signature) never goes upstream
    assert turns[-2]["content"][0] == SIGNED and turns[-3:] == OPEN_ROUND  # the open round as the agent sent it


@pytest.mark.parametrize("turns,needle", [
    ([{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "nope", "content": "x"}]}], "never issued"),
    ([{"role": "user", "content": "go"}, {"role": "assistant", "content": [{"type": "thinking", "thinking": "t"}]}],
     "signature"),
])
def test_anthropic_bad_blocks_are_400_in_anthropic_error_json(turns: list[object], needle: str) -> None:
    with pytest.raises(GatewayError) as caught:
        ANTHROPIC.parse(_anthropic(turns), {}, "")
    error = json.loads(ANTHROPIC.error_body(caught.value))
    assert caught.value.status == 400 and error["type"] == "error"
    assert error["error"]["type"] == "invalid_request_error" and needle in error["error"]["message"]


def test_anthropic_stream_without_message_stop_has_no_answer() -> None:
    reader = ANTHROPIC.stream_reader(ANTHROPIC.parse(_anthropic(OPEN_ROUND), {}, ""), manage=False)
    start = {"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant", "content": [],
                                                  "usage": {"input_tokens": 3}}}
    passed = reader.feed(b"event: message_start\ndata: " + json.dumps(start).encode() + b"\n\n")
    assert passed and reader.result().answer is None and "message_stop" in reader.result().error
    assert ANTHROPIC.stream_error("cut").startswith(b"event: error\ndata: ")


EVERY_BLOCK = [
    {"role": "user", "content": [
        {"type": "text", "text": "what is on this page?", "cache_control": {"type": "ephemeral"}},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
        {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "scope: 10.0.0.0/24"},
         "citations": {"enabled": True}}]},
    {"role": "assistant", "content": [
        SIGNED, {"type": "redacted_thinking", "data": "opaque-blob"},
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "CVE-2024-6387"}},
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1",
         "content": [{"type": "web_search_result", "url": "https://example.test", "title": "regreSSHion",
                      "encrypted_content": "enc", "page_age": None}]},
        {"type": "text", "text": "Found it.", "citations": [{"type": "web_search_result_location", "url":
                                                            "https://example.test", "cited_text": "sshd"}]},
        {"type": "tool_use", "id": "toolu_1", "name": "terminal", "input": {"cmd": "nmap 10.0.0.1"}}]},
    {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "is_error": True,
         "content": [{"type": "text", "text": "nmap: host down"}]}]},
]


def test_anthropic_manage_with_nothing_to_fold_gives_back_every_block_and_every_field() -> None:
    fields = {"system": [{"type": "text", "text": "rules", "cache_control": {"type": "ephemeral"}}],
              "tools": [{"name": "terminal", "input_schema": {"type": "object"}},
                        {"type": "web_search_20250305", "name": "web_search", "max_uses": 3}],
              "tool_choice": {"type": "auto", "disable_parallel_tool_use": True}, "stop_sequences": ["</done>"],
              "metadata": {"user_id": "u-7"}, "temperature": 0.3, "thinking": {"type": "enabled", "budget_tokens": 512},
              "cache_control": {"type": "ephemeral"}, "x_vendor_field": {"kept": [1, 2]}}
    request = ANTHROPIC.parse(_anthropic(EVERY_BLOCK, **fields), {}, "")
    sent = json.loads(ANTHROPIC.upstream_body(request, "claude-y", request.messages, manage=True, max_output=700))
    assert sent == {**json.loads(request.raw), "model": "claude-y", "max_tokens": 700}
