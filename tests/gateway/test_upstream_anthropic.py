"""The scripted Anthropic upstream against the official `anthropic` SDK: it speaks the format and enforces its
rules, so the gateway's tests can trust what it accepts and refuses."""
from __future__ import annotations

import copy
from collections.abc import Iterator

import anthropic
import pytest

from flows.engine import is_context_overflow_error, observed_context_limit, observed_token_count, request_tokens
from tests.gateway.upstream_anthropic import COUNT_MODEL, AnthropicUpstream

KEY = "sk-ant-scripted"
SYSTEM = [{"type": "text", "text": "You are a penetration tester. " * 40, "cache_control": {"type": "ephemeral"}}]
TOOLS = [{"name": "terminal", "description": "run a shell command",
          "input_schema": {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]}}]
THINKING = {"type": "enabled", "budget_tokens": 1024}


@pytest.fixture(scope="module")
def upstream() -> Iterator[AnthropicUpstream]:
    server = AnthropicUpstream(window_tokens=30_000, api_key=KEY)
    yield server
    server.close()


@pytest.fixture
def client(upstream: AnthropicUpstream) -> anthropic.Anthropic:
    upstream.faults.clear()
    return anthropic.Anthropic(base_url=upstream.url, api_key=KEY, max_retries=0, timeout=20)


def create(client: anthropic.Anthropic, messages: list, *, stream: bool, **extra):
    args = {"model": "claude-sonnet-4-6", "max_tokens": 2048, "system": SYSTEM, "tools": TOOLS,
            "thinking": THINKING, "messages": messages, **extra}
    if not stream:
        return client.messages.create(**args)
    with client.messages.stream(**args) as events:
        return events.get_final_message()


def agent_turn(client: anthropic.Anthropic, messages: list, *, stream: bool) -> anthropic.types.Message:
    """One model call of a tool loop; the answer is appended as the SDK gives it, a tool result after it."""
    answer = create(client, messages, stream=stream)
    messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in answer.content]})
    for block in answer.content:
        if block.type == "tool_use":
            messages.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": block.id, "content": f"{block.input['cmd']}: 22/tcp open"}]})
    return answer


@pytest.mark.parametrize("stream", [False, True])
def test_a_twenty_turn_tool_loop_with_thinking_runs_and_reads_the_cached_prefix(stream):
    fresh = AnthropicUpstream(api_key=KEY)  # an empty cache: the first call writes the prefix
    client = anthropic.Anthropic(base_url=fresh.url, api_key=KEY, max_retries=0, timeout=20)
    messages: list = [{"role": "user", "content": "scan 10.10.5.23"}]
    answers = [agent_turn(client, messages, stream=stream) for _ in range(20)]
    assert [a.stop_reason for a in answers[:2]] == ["tool_use", "end_turn"]
    assert all(a.content[0].type == "thinking" and a.content[0].signature for a in answers)
    assert answers[0].usage.cache_creation_input_tokens > 0
    assert all(a.usage.cache_read_input_tokens >= answers[0].usage.cache_creation_input_tokens for a in answers[1:])
    fresh.close()


def test_a_changed_thinking_block_or_a_missing_one_is_refused(client):
    messages: list = [{"role": "user", "content": "scan"}]
    agent_turn(client, messages, stream=False)
    changed = copy.deepcopy(messages)
    changed[1]["content"][0]["thinking"] += " (edited)"
    with pytest.raises(anthropic.BadRequestError, match="Invalid `signature` in `thinking` block"):
        create(client, changed, stream=False)
    stripped = copy.deepcopy(messages)
    stripped[1]["content"] = stripped[1]["content"][1:]
    with pytest.raises(anthropic.BadRequestError, match="must start with a thinking block"):
        create(client, stripped, stream=False)


def test_a_tool_use_without_its_result_and_a_result_without_its_call_are_refused(client):
    messages: list = [{"role": "user", "content": "scan"}]
    agent_turn(client, messages, stream=False)
    with pytest.raises(anthropic.BadRequestError, match="without `tool_result` blocks immediately after"):
        create(client, [*messages[:2], {"role": "user", "content": "go on"}], stream=False)
    with pytest.raises(anthropic.BadRequestError, match="unexpected `tool_use_id`"):
        create(client, [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_x",
                                                      "content": "?"}]}], stream=False, thinking=None)


def test_a_prompt_over_the_window_gets_anthropics_overflow_error_with_its_counts(client, upstream):
    big = [{"role": "user", "content": "nmap output line\n" * 8000}]
    with pytest.raises(anthropic.BadRequestError) as info:
        create(client, big, stream=False)
    assert is_context_overflow_error(info.value) and "prompt is too long" in str(info.value)
    assert observed_context_limit(info.value) == upstream.window_tokens
    assert observed_token_count(info.value) > upstream.window_tokens
    with pytest.raises(anthropic.BadRequestError, match="exceed context limit") as info:
        create(client, [{"role": "user", "content": "scan"}], stream=False, max_tokens=29_990)
    assert is_context_overflow_error(info.value)


def test_count_tokens_answers_what_the_upstream_counts(client):
    messages = [{"role": "user", "content": "scan 10.10.5.23"}]
    counted = client.messages.count_tokens(model="claude-sonnet-4-6", system=SYSTEM, tools=TOOLS, messages=messages)
    expected = request_tokens({"system": SYSTEM, "tools": TOOLS, "messages": messages}, "anthropic",
                              model=COUNT_MODEL)
    assert counted.input_tokens == expected.prompt


@pytest.mark.parametrize("fault, error, status", [
    ("overloaded", anthropic.APIStatusError, 529), ("ratelimit", anthropic.RateLimitError, 429),
    ("too_large", anthropic.APIStatusError, 413)])
def test_scripted_faults_answer_with_anthropics_statuses(client, upstream, fault, error, status):
    upstream.faults.append(fault)
    with pytest.raises(error) as info:
        create(client, [{"role": "user", "content": "scan"}], stream=False)
    assert info.value.status_code == status
    assert is_context_overflow_error(info.value) is (fault == "too_large")


def test_a_stream_can_drip_stop_early_or_send_an_error_event(client, upstream):
    upstream.faults.append("drip")
    assert create(client, [{"role": "user", "content": "scan"}], stream=True).stop_reason == "tool_use"
    upstream.faults.append("error_event")
    with pytest.raises(anthropic.APIStatusError, match="Overloaded"):
        create(client, [{"role": "user", "content": "scan"}], stream=True)
    upstream.faults.append("cut")
    args = {"model": "claude-sonnet-4-6", "max_tokens": 64, "messages": [{"role": "user", "content": "scan"}]}
    with client.messages.stream(**args) as events:
        names = [event.type for event in events]
    assert "message_stop" not in names and "message_start" in names
    upstream.faults.append("garbage")
    with client.messages.stream(**args) as events:
        assert [event.type for event in events] == []  # HTML is no event at all
