"""The scripted Responses upstream against the official `openai` SDK's `responses.create`: both state styles,
its rules and its faults, so the gateway's tests can trust it."""
from __future__ import annotations

import copy
from collections.abc import Iterator

import openai
import pytest

from flows.engine import is_context_overflow_error
from tests.gateway.upstream_responses import ResponsesUpstream

KEY = "sk-scripted-responses"
TOOLS = [{"type": "function", "name": "shell", "description": "run a command", "strict": False,
          "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]}}]
BASE = {"model": "gpt-5", "instructions": "You are a pentest agent.", "tools": TOOLS,
        "reasoning": {"effort": "low", "summary": "auto"}}


@pytest.fixture(scope="module")
def upstream() -> Iterator[ResponsesUpstream]:
    server = ResponsesUpstream(window_tokens=30_000, api_key=KEY)
    yield server
    server.close()


@pytest.fixture
def client(upstream: ResponsesUpstream) -> openai.OpenAI:
    upstream.faults.clear()
    return openai.OpenAI(base_url=upstream.url, api_key=KEY, max_retries=0, timeout=20)


def respond(client: openai.OpenAI, *, stream: bool, **args):
    if not stream:
        return client.responses.create(**{**BASE, **args})
    with client.responses.stream(**{**BASE, **args}) as events:
        return events.get_final_response()


def outputs_for(response) -> list[dict]:
    return [{"type": "function_call_output", "call_id": item.call_id, "output": f"{item.arguments}: 22/tcp open"}
            for item in response.output if item.type == "function_call"]


@pytest.mark.parametrize("stream", [False, True])
def test_a_stateless_twenty_turn_loop_sends_everything_back_encrypted_reasoning_included(client, stream):
    items: list = [{"role": "user", "content": "scan 10.10.5.23"}]
    for _ in range(20):
        response = respond(client, stream=stream, input=items, store=False,
                           include=["reasoning.encrypted_content"])
        assert response.output[0].type == "reasoning" and response.output[0].encrypted_content
        items += [item.model_dump(exclude_none=True) for item in response.output] + outputs_for(response)
    assert sum(item.get("type") == "function_call_output" for item in items) == 10


@pytest.mark.parametrize("stream", [False, True])
def test_a_stateful_twenty_turn_loop_continues_from_previous_response_id(client, upstream, stream):
    response = respond(client, stream=stream, input="scan 10.10.5.23")
    for _ in range(19):
        follow = outputs_for(response) or [{"role": "user", "content": "next port"}]
        response = respond(client, stream=stream, input=follow, previous_response_id=response.id)
    assert client.responses.retrieve(response.id).id == response.id
    conversation = upstream.stored[response.id]["input"]
    assert conversation[0] == {"role": "user", "content": "scan 10.10.5.23"} and len(conversation) > 30


def test_a_changed_encrypted_content_and_an_output_without_its_call_are_refused(client):
    items: list = [{"role": "user", "content": "scan"}]
    response = respond(client, stream=False, input=items, store=False, include=["reasoning.encrypted_content"])
    sent = items + [item.model_dump(exclude_none=True) for item in response.output] + outputs_for(response)
    changed = copy.deepcopy(sent)
    changed[1]["encrypted_content"] = changed[1]["encrypted_content"].replace("S", "T", 1) + "A"
    with pytest.raises(openai.BadRequestError, match="could not be verified"):
        respond(client, stream=False, input=changed, store=False)
    with pytest.raises(openai.BadRequestError, match="No tool call found"):
        respond(client, stream=False, input=[items[0], sent[-1]], store=False)


def test_an_unknown_previous_response_id_is_a_404(client):
    with pytest.raises(openai.NotFoundError, match="not found"):
        respond(client, stream=False, input="hi", previous_response_id="resp_never")


def test_a_prompt_over_the_window_is_context_length_exceeded_also_inside_a_stream(client, upstream):
    big = "nmap output line\n" * 8000
    with pytest.raises(openai.BadRequestError) as info:
        respond(client, stream=False, input=big)
    assert info.value.code == "context_length_exceeded" and is_context_overflow_error(info.value)
    upstream.faults.append("failed_overflow")
    with client.responses.stream(**BASE, input=big) as events:
        failed = [event for event in events if event.type == "response.failed"]
    assert failed and failed[0].response.error.code == "context_length_exceeded"
    assert is_context_overflow_error(failed[0].response.error.model_dump_json())


@pytest.mark.parametrize("fault, error, status", [("ratelimit", openai.RateLimitError, 429),
                                                  ("server_error", openai.InternalServerError, 500)])
def test_scripted_faults_answer_with_openais_statuses(client, upstream, fault, error, status):
    upstream.faults.append(fault)
    with pytest.raises(error) as info:
        respond(client, stream=False, input="scan")
    assert info.value.status_code == status and not is_context_overflow_error(info.value)


def test_a_stream_can_drip_stop_early_or_be_garbage(client, upstream):
    upstream.faults.append("drip")
    assert respond(client, stream=True, input="scan").status == "completed"
    upstream.faults.append("cut")
    with pytest.raises(RuntimeError, match="response.completed"):
        respond(client, stream=True, input="scan")
    upstream.faults.append("garbage")
    with pytest.raises(Exception):  # noqa: B017 - the SDK fails on the HTML in its own way; never a response
        respond(client, stream=True, input="scan")
