"""Faults and overflow recovery of `/v1/messages` through `manage.py run` and the scripted Anthropic upstream:
a context overflow ("prompt is too long", 413 `request_too_large`) compacted with the reported count and retried
at most 3 times; 429 `rate_limit_error` and 529 `overloaded_error` (before or inside a stream) passed through
and never compacted; a whole answer that is no message a 502. Nothing half-written, never a 500."""
from __future__ import annotations

import json

import anthropic
import pytest

from flows.engine import request_tokens
from tests.gateway.anthropic_stand import (
    MODEL,
    RESULT,
    SYSTEM,
    TOOLS,
    WINDOW,
    Stand,
    call_record,
    observed_call,
    post,
    tool_rounds,
)
from tests.gateway.upstream_anthropic import COUNT_MODEL

pytestmark = pytest.mark.timeout(600)


@pytest.fixture
def stand(anthropic_stand: Stand) -> Stand:
    return anthropic_stand  # one server for the package's Anthropic tests (tests/gateway/conftest.py)


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("fault,status,kind", [("overloaded", 529, "overloaded_error"),
                                               ("ratelimit", 429, "rate_limit_error")])
def test_overloaded_and_rate_limits_pass_through_and_never_compact(stand: Stand, fault: str, status: int,
                                                                   kind: str, stream: bool) -> None:
    """Even with a history that a compaction could shrink: compacting cannot fix them."""
    stand.upstream.faults.append(fault)
    before = len(stand.upstream.requests)
    messages = tool_rounds(f"{fault} {stream} on 10.2.2.2", 4, RESULT[:1500])
    with pytest.raises(anthropic.APIStatusError) as caught:
        stand.client("manage").messages.create(model=MODEL, max_tokens=256, system=SYSTEM, tools=TOOLS,
                                               messages=messages, stream=stream)  # type: ignore
    assert caught.value.status_code == status and caught.value.body["error"]["type"] == kind  # type: ignore
    assert len(stand.upstream.requests) == before + 1  # no compaction, no retry
    chain_id = int(caught.value.response.headers["X-Chain-Id"])
    call = call_record(stand, chain_id)
    assert call["status"] == "failed" and call["attempts"] == 1
    assert not stand.query(f"SummaryEvent.objects.filter(chain_id={chain_id}, trigger='overflow').exists()")


def test_an_overloaded_error_event_mid_stream_reaches_the_agent_and_is_not_compacted(stand: Stand) -> None:
    stand.upstream.faults.append("error_event")
    before = len(stand.upstream.requests)
    raw = json.dumps({"model": MODEL, "max_tokens": 64, "stream": True, "system": "s",
                      "messages": [{"role": "user", "content": "overloaded mid-stream on 10.2.2.3"}]}).encode()
    status, headers, body = post(stand, "/v1/messages", raw)
    events = body.strip().split(b"\n\n")
    assert status == 200 and events[0].startswith(b"event: message_start")
    assert [e for e in events if e.startswith(b"event: error")] == [events[-1]]  # the upstream's, once, last
    assert json.loads(events[-1].split(b"data: ", 1)[1])["error"]["type"] == "overloaded_error"
    assert len(stand.upstream.requests) == before + 1
    chain = stand.settled(int(headers["X-Chain-Id"]))
    assert [m["role"] for m in chain["raw"]] == ["system", "user"]  # no half answer appended
    assert call_record(stand, chain["id"])["status"] == "failed"


def test_a_whole_answer_that_is_no_message_is_an_anthropic_502_and_nothing_is_appended(stand: Stand) -> None:
    stand.upstream.faults.append("garbage")
    raw = json.dumps({"model": MODEL, "max_tokens": 64, "system": "s",
                      "messages": [{"role": "user", "content": "garbage answer from 10.3.3.4"}]}).encode()
    status, headers, body = post(stand, "/v1/messages", raw)
    error = json.loads(body)
    assert status == 502 and error["type"] == "error" and error["error"]["type"] == "api_error"
    assert "not an Anthropic message" in error["error"]["message"]
    chain = stand.settled(int(headers["X-Chain-Id"]))
    assert [m["role"] for m in chain["raw"]] == ["system", "user"]
    assert call_record(stand, chain["id"])["status"] == "failed"


def test_an_overflow_is_compacted_with_the_reported_count_and_retried(stand: Stand) -> None:
    messages = tool_rounds("overflow test on 10.6.6.6", 14)
    raw, sent, chain_id = observed_call(stand, messages)
    assert raw.parse().content
    assert len(sent) >= 2 and len(sent[-1]["body"]["messages"]) < len(messages)
    assert call_record(stand, chain_id)["attempts"] >= 2


def test_a_413_request_too_large_is_compacted_and_retried_once(stand: Stand) -> None:
    messages = tool_rounds("413 test on 10.6.6.7", 8, RESULT[:1500])  # fits: only the 413 refuses it
    raw, sent, chain_id = observed_call(stand, messages, "too_large")
    assert raw.parse().content and len(sent) == 2
    assert sent[0]["body"]["messages"] == messages  # the agent's own history first (observe)
    assert len(json.dumps(sent[1]["body"]["messages"])) < len(json.dumps(sent[0]["body"]["messages"]))
    call = call_record(stand, chain_id)
    assert call["status"] == "ok" and call["attempts"] == 2
    assert stand.query(f"SummaryEvent.objects.filter(chain_id={chain_id}, trigger='overflow').count()") >= 1


def test_the_count_a_prompt_is_too_long_error_quotes_is_what_the_retry_is_fitted_with(stand: Stand) -> None:
    """The upstream quotes twice the prompt it really counted: the retry is fitted with the provider/tiktoken
    ratio learned from that count (about twice the one learned from earlier answers), and fits."""
    learned = stand.query(f"TokenRatio.objects.filter(model={MODEL!r}).values_list('ratio', flat=True).first()")
    messages = tool_rounds("too long test on 10.6.6.8", 8, RESULT[:1500])
    raw, sent, chain_id = observed_call(stand, messages, "too_long")
    assert raw.parse().content and len(sent) == 2
    upstream_count = [request_tokens(r["body"], "anthropic", model=COUNT_MODEL).prompt for r in sent]
    assert upstream_count[0] > 0.6 * WINDOW > upstream_count[1]
    call = call_record(stand, chain_id)
    assert call["attempts"] == 2 and call["budget"]["ratio"] >= 1.5 * (learned or 1.0)


def test_overflow_retries_stop_after_three_and_the_upstreams_413_comes_back(stand: Stand) -> None:
    messages = tool_rounds("413 forever on 10.6.6.9", 14)
    before = len(stand.upstream.requests)
    with pytest.raises(anthropic.APIStatusError) as caught:
        observed_call(stand, messages, *["too_large"] * 6)
    assert caught.value.status_code == 413
    assert caught.value.body["error"]["type"] == "request_too_large"  # type: ignore[index]
    tries = [r for r in stand.upstream.requests[before:] if r["body"].get("tools")]
    assert 2 <= len(tries) <= 4  # the first attempt and at most 3 retries (fewer when a compaction cannot shrink)
