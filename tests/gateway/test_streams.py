"""Stream assemblers: the final answer from SSE bytes, agreeing with the SDKs' accumulators; bad streams named."""
from __future__ import annotations

import json

import pytest
from anthropic.lib.streaming._messages import accumulate_event
from hypothesis import given, settings
from hypothesis import strategies as st
from openai import omit
from openai._models import construct_type_unchecked
from openai.lib.streaming.responses._responses import ResponseStreamState
from openai.types.responses import ResponseStreamEvent

from flows.engine import is_context_overflow_error
from flows.gateway.streams import AnthropicStream, ResponsesStream, SseParser, assemble
from tests.gateway.wire_events import anthropic_events, responses_events, sse

MESSAGE = {"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-6", "content": [
    {"type": "thinking", "thinking": "Port 22 first, then the web server.", "signature": "EqQBCkYIAxgCKkDs0ig=="},
    {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"},
    {"type": "text", "text": "Scanning 10.0.0.5 <script>", "citations": [
        {"type": "char_location", "cited_text": "10.0.0.5", "document_index": 0, "document_title": None,
         "start_char_index": 0, "end_char_index": 8}]},
    {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "CVE-2024-6387"}},
    {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [
        {"type": "web_search_result", "url": "https://example.com", "title": "regreSSHion",
         "encrypted_content": "Eo8BCioIAhgBIiQ", "page_age": None}]},
    {"type": "tool_use", "id": "toolu_01", "name": "terminal", "input": {"cmd": "nmap -sV 10.0.0.5", "n": [1, 2]}},
], "stop_reason": "tool_use", "stop_sequence": None,
    "usage": {"input_tokens": 1200, "output_tokens": 87, "cache_read_input_tokens": 1024}}

RESPONSE = {"id": "resp_01", "object": "response", "created_at": 1756000000, "status": "completed", "model": "gpt-5",
            "output": [
                {"type": "reasoning", "id": "rs_01", "summary": [{"type": "summary_text", "text": "scan, then read"}],
                 "encrypted_content": "gAAAAABo_encrypted=="},
                {"type": "message", "id": "msg_01", "role": "assistant", "status": "completed",
                 "content": [{"type": "output_text", "text": "Found ssh on 22 <b>", "annotations": []}]},
                {"type": "function_call", "id": "fc_01", "call_id": "call_01", "name": "shell",
                 "arguments": '{"cmd":"nmap -sV 10.0.0.5"}', "status": "completed"}],
            "parallel_tool_calls": True, "tool_choice": "auto", "tools": [], "error": None,
            "incomplete_details": None,
            "usage": {"input_tokens": 50, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 30,
                      "output_tokens_details": {"reasoning_tokens": 10}, "total_tokens": 80}}


def anthropic_sdk(events: list[dict]) -> dict:
    snapshot, buffers = None, {}
    for event in events:
        snapshot = accumulate_event(event=event, current_snapshot=snapshot, json_bufs=buffers)
    return snapshot.to_dict()


def responses_sdk(events: list[dict]) -> dict:
    state, final = ResponseStreamState(input_tools=omit, text_format=omit), None
    for event in events:
        for out in state.handle_event(construct_type_unchecked(type_=ResponseStreamEvent, value=event)):
            if out.type == "response.completed":
                final = out.response.to_dict()
    for item in final["output"]:  # the SDK's parsing helpers add these; they are not on the wire
        item.pop("parsed_arguments", None)
        for part in item.get("content") or []:
            part.pop("parsed", None)
    return final


def test_an_anthropic_stream_assembles_into_the_message_the_sdk_assembles():
    events = anthropic_events(MESSAGE)
    outcome = assemble(AnthropicStream(), [sse(events)])
    assert outcome.complete and outcome.answer["content"] == MESSAGE["content"]
    sdk = anthropic_sdk(events)
    assert outcome.answer["content"] == sdk["content"]
    assert (outcome.answer["stop_reason"], outcome.answer["usage"]) == (sdk["stop_reason"], sdk["usage"])
    assert outcome.answer["usage"]["cache_read_input_tokens"] == 1024  # kept from message_start


def test_a_responses_stream_assembles_into_the_response_the_sdk_assembles():
    events = responses_events(RESPONSE)
    outcome = assemble(ResponsesStream(), [sse(events)])
    assert outcome.complete and outcome.answer == RESPONSE
    assert outcome.answer["output"] == responses_sdk(events)["output"]


def test_a_completed_response_without_output_takes_the_finished_items_like_the_sdk():
    events = responses_events(RESPONSE)
    events[-1] = {**events[-1], "response": {k: v for k, v in RESPONSE.items() if k != "output"}}
    outcome = assemble(ResponsesStream(), [sse(events)])
    assert outcome.answer["output"] == RESPONSE["output"] == responses_sdk(events)["output"]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 400), min_size=1, max_size=40), st.sampled_from(["\n", "\r\n", "\r"]))
def test_any_chunking_and_any_line_ending_give_the_same_answer(cuts, newline):
    for assembler, events, whole in ((AnthropicStream, anthropic_events(MESSAGE), MESSAGE),
                                     (ResponsesStream, responses_events(RESPONSE), RESPONSE)):
        data = sse(events).replace(b"\n", newline.encode())
        pieces, at = [], 0
        for cut in cuts:
            pieces.append(data[at:at + cut])
            at += cut
        pieces.append(data[at:])
        outcome = assemble(assembler(), pieces)
        assert outcome.complete
        assert outcome.answer["content" if assembler is AnthropicStream else "output"] == \
            whole["content" if assembler is AnthropicStream else "output"]


def test_the_parser_keeps_event_names_and_raw_bytes_and_skips_comments():
    parser = SseParser()
    events = parser.feed(b": keep-alive\n\nevent: ping\ndata: {\"type\": \"ping\"}\n\nevent: message_st")
    assert [(e.event, e.data) for e in events] == [("ping", '{"type": "ping"}')]
    assert events[0].raw == b'event: ping\ndata: {"type": "ping"}\n\n'
    assert parser.pending == b"event: message_st"
    assert parser.feed(b"art\ndata: a\ndata: b\n\n")[0].data == "a\nb"


def test_an_anthropic_stream_without_message_stop_is_incomplete_and_has_no_answer():
    outcome = assemble(AnthropicStream(), [sse(anthropic_events(MESSAGE)[:-3])])
    assert outcome.status == "incomplete" and outcome.answer is None
    assert outcome.partial["content"][0] == MESSAGE["content"][0]


def test_an_anthropic_error_event_after_the_200_is_an_error_outcome():
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    outcome = assemble(AnthropicStream(), [sse([*anthropic_events(MESSAGE)[:4], error])])
    assert (outcome.status, outcome.error["type"], outcome.answer) == ("error", "overloaded_error", None)
    assert not is_context_overflow_error(json.dumps(outcome.error))


@pytest.mark.parametrize("data", [
    b"<html><body>502 Bad Gateway</body></html>",
    b"data: not json\n\n",
    b"data: [1, 2]\n\n",
    sse([{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "x"}}]),
    sse([*anthropic_events(MESSAGE)[:2], {"type": "content_block_delta", "index": 5,
                                          "delta": {"type": "text_delta", "text": "x"}}]),
    sse([*anthropic_events(MESSAGE)[:2],
         {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "t", "name": "n",
                                                                       "input": {}}},
         {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{oops"}},
         {"type": "content_block_stop", "index": 0}, {"type": "message_stop"}]),
])
def test_garbage_and_out_of_order_anthropic_events_are_invalid_never_an_exception(data):
    outcome = assemble(AnthropicStream(), [data])
    assert outcome.status == "invalid" and outcome.answer is None and outcome.reason


def test_unknown_anthropic_events_and_deltas_are_skipped():
    events = anthropic_events(MESSAGE)
    events.insert(3, {"type": "content_block_delta", "index": 0, "delta": {"type": "hologram_delta", "x": 1}})
    events.insert(2, {"type": "telemetry_2031", "x": 1})
    assert assemble(AnthropicStream(), [sse(events)]).answer["content"] == MESSAGE["content"]


def test_a_failed_response_carries_its_error_and_an_overflow_is_recognised():
    failed = {**RESPONSE, "status": "failed", "output": [], "error": {
        "code": "context_length_exceeded", "message": "Your input exceeds the context window of this model."}}
    outcome = assemble(ResponsesStream(), [sse(responses_events(failed, terminal="response.failed"))])
    assert (outcome.status, outcome.answer) == ("failed", None)
    assert is_context_overflow_error(json.dumps(outcome.error))


def test_an_incomplete_response_is_not_complete_and_not_an_overflow():
    cut = {**RESPONSE, "status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}}
    outcome = assemble(ResponsesStream(), [sse(responses_events(cut, terminal="response.incomplete"))])
    assert (outcome.status, outcome.answer) == ("incomplete", None)
    assert "max_output_tokens" in outcome.reason and outcome.partial["output"] == RESPONSE["output"]
    assert not is_context_overflow_error(json.dumps(outcome.partial["incomplete_details"]))


@pytest.mark.parametrize("error", [
    {"type": "error", "sequence_number": 2, "error": {"type": "invalid_request_error",
                                                      "code": "context_length_exceeded", "message": "too long"}},
    {"type": "error", "sequence_number": 2, "code": "server_error", "message": "boom", "param": None},
])
def test_a_responses_error_event_is_an_error_outcome_nested_or_flat(error):
    outcome = assemble(ResponsesStream(), [sse([*responses_events(RESPONSE)[:3], error])])
    assert outcome.status == "error" and outcome.error["message"] in ("too long", "boom")


@pytest.mark.parametrize("data, status", [
    (sse(responses_events(RESPONSE)[:-1]), "incomplete"),
    (b"", "invalid"),
    (b"data: {\"type\": \"response.output_text.delta\", \"output_index\": 0}\n\n", "invalid"),
    (sse([*responses_events(RESPONSE)[:2], {"type": "response.output_text.delta", "output_index": 9,
                                            "content_index": 0, "delta": "x"}]), "invalid"),
    (b"event: response.created\ndata: {\"type\": \"response.created\"\n\n", "invalid"),
])
def test_a_responses_stream_that_stops_early_or_is_garbage_is_never_complete(data, status):
    outcome = assemble(ResponsesStream(), [data])
    assert outcome.status == status and outcome.answer is None
