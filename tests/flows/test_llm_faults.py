"""A model endpoint that is down, slow or returns garbage: a clear error and a failed LLMCall row, never a crash,
an empty summary or a lost message. Everything runs against a scripted local HTTP server (no real model)."""
from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from flows.ingest import flow_create
from flows.models import LLMCall
from flows.pipeline.llm.callables import chat_callable_for, summarize_callable_for
from flows.pipeline.llm.errors import ContextOverflowError, RetryableProviderError, SummaryFailed
from summarizer import is_context_overflow_error, observed_token_count

from .llm_fakes import (  # noqa: F401  (fixtures)
    close_connection,
    closed_port_url,
    completion,
    isolated_llm,
    json_reply,
    make_provider,
    raw_reply,
    sleep_then,
)

pytestmark = pytest.mark.django_db


# No identifier in it, so the ledger (tests/flows/test_llm.py) leaves the model's answer as it was.
PROMPT = "<messages>gobuster found an admin page and a backup archive on the web host</messages>"
LLAMA_CPP_OVERFLOW = ("This model's maximum context length is 2048 tokens. However, you requested 3026 tokens "
                      "(3010 in the messages, 16 in the completion). Please reduce the length of the messages or "
                      "completion.")


@pytest.fixture
def flow():
    owner = get_user_model().objects.create_user("faults-owner")
    return flow_create(owner=owner, title="faults", model_name="agent-model")


def _summarize_fails(flow, match: str) -> LLMCall:
    with pytest.raises(SummaryFailed, match=match):
        summarize_callable_for(flow=flow)(PROMPT)
    call = LLMCall.objects.get()
    assert call.ok is False and call.error
    return call


def test_a_refused_connection_is_retried_then_recorded_as_failed(flow):
    make_provider(closed_port_url(), max_attempts=3)
    call = _summarize_fails(flow, "could not reach the model endpoint")
    assert call.attempts == 3


def test_a_connection_closed_without_an_answer_is_retried_then_fails(fake_endpoint, flow):
    make_provider(fake_endpoint.url, max_attempts=2)
    fake_endpoint.queue(close_connection(), close_connection())
    assert _summarize_fails(flow, "could not reach|disconnected").attempts == 2
    assert len(fake_endpoint.requests) == 2


def test_an_endpoint_slower_than_the_timeout_fails_after_the_attempts(fake_endpoint, flow):
    make_provider(fake_endpoint.url, timeout_seconds=0.2, max_attempts=2)
    fake_endpoint.queue(sleep_then(1.0, completion("late")), sleep_then(1.0, completion("late")))
    assert _summarize_fails(flow, "timed out").attempts == 2


def test_an_empty_body_fails_at_once(fake_endpoint, flow):
    make_provider(fake_endpoint.url)
    fake_endpoint.queue(raw_reply(200, b""))
    assert _summarize_fails(flow, "not JSON").attempts == 1


def test_a_non_json_body_fails_at_once(fake_endpoint, flow):
    make_provider(fake_endpoint.url)
    fake_endpoint.queue(raw_reply(200, b"<html>gateway says hi</html>", "text/html"))
    assert _summarize_fails(flow, "did not return a chat completion").attempts == 1


def test_a_json_body_without_choices_fails_at_once(fake_endpoint, flow):
    make_provider(fake_endpoint.url)
    fake_endpoint.queue(json_reply(200, {"id": "x", "object": "chat.completion"}))
    _summarize_fails(flow, "without choices")


def test_a_choice_without_text_fails(fake_endpoint, flow):
    make_provider(fake_endpoint.url)
    fake_endpoint.queue(completion(None))
    _summarize_fails(flow, "no text")


def test_a_server_error_then_a_good_answer_succeeds_on_the_retry(fake_endpoint, flow):
    make_provider(fake_endpoint.url, max_attempts=3)
    fake_endpoint.queue(json_reply(500, {"error": {"message": "internal"}}), completion("second time lucky"))
    assert summarize_callable_for(flow=flow)(PROMPT) == "second time lucky"
    call = LLMCall.objects.get()
    assert (call.ok, call.attempts, call.prompt_tokens) == (True, 2, 11)


def test_a_rate_limit_is_retried_but_an_exhausted_quota_is_not(fake_endpoint, flow):
    make_provider(fake_endpoint.url, max_attempts=3)
    fake_endpoint.queue(json_reply(429, {"error": {"message": "Rate limit reached, slow down"}}), completion("ok"))
    assert summarize_callable_for(flow=flow)(PROMPT) == "ok"
    fake_endpoint.queue(json_reply(429, {"error": {"message": "You exceeded your current quota",
                                                   "code": "insufficient_quota"}}))
    with pytest.raises(SummaryFailed, match="HTTP 429"):
        summarize_callable_for(flow=flow)(PROMPT + " again")
    assert len(fake_endpoint.requests) == 3


def test_a_context_overflow_is_not_retried_and_fails_the_summary(fake_endpoint, flow):
    make_provider(fake_endpoint.url, max_attempts=3)
    fake_endpoint.queue(json_reply(400, {"error": {"message": LLAMA_CPP_OVERFLOW, "code": "context_length_exceeded"}}))
    call = _summarize_fails(flow, "summarization failed")
    assert call.attempts == 1 and len(fake_endpoint.requests) == 1


def test_a_context_overflow_in_chat_is_recognisable_and_carries_the_token_count(fake_endpoint, flow):
    make_provider(fake_endpoint.url)
    fake_endpoint.queue(json_reply(400, {"error": {"message": LLAMA_CPP_OVERFLOW}}))
    with pytest.raises(ContextOverflowError) as caught:
        chat_callable_for(flow=flow)([{"role": "user", "content": "long"}])
    assert is_context_overflow_error(caught.value) and observed_token_count(caught.value) == 3026
    assert LLMCall.objects.get().ok is False


def test_chat_exhausting_its_attempts_raises_a_retryable_provider_error(flow):
    from summarizer.recovery.overflow import is_retryable_provider_error

    make_provider(closed_port_url(), max_attempts=2)
    with pytest.raises(RetryableProviderError) as caught:
        chat_callable_for(flow=flow)([{"role": "user", "content": "hi"}])
    assert is_retryable_provider_error(caught.value) and caught.value.attempts == 2


@pytest.mark.parametrize("reply", [close_connection(), raw_reply(200, b""), raw_reply(200, b"<html/>", "text/html"),
                                   json_reply(200, {"object": "chat.completion"}),
                                   json_reply(400, {"error": {"message": LLAMA_CPP_OVERFLOW}})],
                         ids=["closed", "empty", "non-json", "no-choices", "overflow"])
def test_a_failing_endpoint_gives_a_failed_event_and_loses_no_message(fake_endpoint, flow, reply):
    from flows.ingest.append import chain_append
    from flows.ingest.create import agent_create
    from flows.pipeline.runs import view_current
    from flows.pipeline.summarization import chain_summarize

    make_provider(fake_endpoint.url, max_attempts=1)
    fake_endpoint.queue(*[reply] * 10)
    chain = agent_create(flow=flow, agent_type="pentester").chains.get()
    chain_append(chain=chain, messages=_two_turn_chain())
    event = chain_summarize(chain_id=chain.id)
    assert event.outcome == "failed" and "summarization failed" in event.reason
    assert event.summary_text == "" and LLMCall.objects.filter(event=event, ok=False).exists()
    raw = [m.to_dict() for m in chain.messages.order_by("seq")]
    assert len(raw) == len(_two_turn_chain())
    view = view_current(chain=chain)
    assert view is None or [m.get("content") for m in view.messages] == [m.get("content") for m in raw]


def _two_turn_chain() -> list[dict]:
    def tool_round(call_id: str, output: str) -> list[dict]:
        call = {"id": call_id, "type": "function", "function": {"name": "terminal", "arguments": "{}"}}
        return [{"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": call_id, "content": output}]

    return [{"role": "system", "content": "You are a penetration tester."},
            {"role": "user", "content": "Scan 10.0.0.5"}, *tool_round("call_1", "22/tcp open"),
            {"role": "assistant", "content": "Port 22 is open."},
            {"role": "user", "content": "Now the web server."}, *tool_round("call_2", "/admin 302")]
