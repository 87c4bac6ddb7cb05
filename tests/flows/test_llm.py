"""flows.pipeline.llm: choosing the backend, what is sent, caching, usage and cost rows, compaction model, fallbacks."""
from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from flows.config import settings_for
from flows.engine import SUMMARY_SYSTEM_PROMPT
from flows.ingest import agent_create, flow_create
from flows.models import LLMCall, SummaryEvent
from flows.pipeline.llm.callables import chat_callable_for, plan_for, summarize_callable_for
from flows.pipeline.llm.errors import LLMError, SummaryFailed
from summarizer import count_tokens, make_extractive

from .llm_fakes import (
    completion,
    isolated_llm,  # noqa: F401  (an autouse fixture)
    json_reply,
    make_provider,
)

pytestmark = pytest.mark.django_db


# No identifier or finding in it: the ledger (tested on its own below) leaves these summaries as the model wrote them.
PROMPT = "<instructions>condense</instructions>\n\n<messages>nmap found 22/tcp and 80/tcp on the web host</messages>"
PROMPT_WITH_IDS = "<instructions>condense</instructions>\n\n<messages>nmap found 22/tcp on 10.0.0.5</messages>"


@pytest.fixture
def flow():
    owner = get_user_model().objects.create_user("llm-owner")
    return flow_create(owner=owner, title="llm", model_name="agent-model")


@pytest.fixture
def event(flow):
    agent = agent_create(flow=flow, agent_type="pentester")
    return SummaryEvent.objects.create(chain=agent.chains.get(), trigger="turn")


def _compaction_settings(flow, **values):
    row = settings_for(profile="agent", flow=None)
    for name, value in values.items():
        setattr(row, name, value)
    row.save()
    return row


def test_it_uses_the_offline_extractive_summarizer_when_no_endpoint_is_configured(flow):
    summarize = summarize_callable_for(flow=flow)
    assert summarize(PROMPT) == make_extractive()(PROMPT)
    assert LLMCall.objects.count() == 0


def test_it_sends_the_summarizer_system_prompt_and_the_prompt_to_the_default_provider(fake_endpoint, flow):
    make_provider(fake_endpoint.url, model="summary-model")
    fake_endpoint.queue(completion("  the summary  "))
    assert summarize_callable_for(flow=flow)(PROMPT) == "the summary"
    sent = fake_endpoint.requests[0]["json"]
    assert sent["model"] == "summary-model"
    assert sent["messages"] == [{"role": "system", "content": SUMMARY_SYSTEM_PROMPT},
                                {"role": "user", "content": PROMPT}]
    assert fake_endpoint.requests[0]["auth"] == "Bearer sk-test-secret-key-1234"


def test_the_system_prompts_are_the_engines_texts():
    import summarizer
    from flows.pipeline.llm.prompts import system_prompt_for

    # one source: the CLI's openai backend sends summarizer.SUMMARY_SYSTEM_PROMPT too
    assert system_prompt_for("summary") is SUMMARY_SYSTEM_PROMPT is summarizer.SUMMARY_SYSTEM_PROMPT
    assert system_prompt_for("compaction") is summarizer.COMPACTION_SYSTEM_PROMPT


def test_what_the_model_left_out_is_appended_as_the_ledger_before_caching(fake_endpoint, flow):
    make_provider(fake_endpoint.url)
    fake_endpoint.queue(completion("ssh is open"))
    summarize = summarize_callable_for(flow=flow)
    expected = "ssh is open\n\nLedger (audited findings and identifiers):\n- identifiers: 10.0.0.5"
    assert summarize(PROMPT_WITH_IDS) == expected
    assert summarize(PROMPT_WITH_IDS) == expected and len(fake_endpoint.requests) == 1


def test_it_records_usage_our_estimate_and_cost_linked_to_the_event(fake_endpoint, event):
    provider = make_provider(fake_endpoint.url, prompt_cost_per_mtok=2.0, completion_cost_per_mtok=10.0)
    fake_endpoint.queue(completion("summary", prompt_tokens=1000, completion_tokens=100))
    summarize_callable_for(event=event)(PROMPT)
    call = LLMCall.objects.get()
    sent = [{"role": "system", "content": SUMMARY_SYSTEM_PROMPT}, {"role": "user", "content": PROMPT}]
    assert (call.event, call.provider, call.model, call.ok, call.cached) == (event, provider, "fake-model", True, False)
    assert (call.prompt_tokens, call.completion_tokens, call.attempts) == (1000, 100, 1)
    assert call.estimated_prompt_tokens == count_tokens(sent, model="fake-model")
    assert call.cost_usd == pytest.approx((1000 * 2.0 + 100 * 10.0) / 1_000_000)


def test_it_joins_several_choices_with_blank_lines_and_drops_empty_ones(fake_endpoint, flow):
    make_provider(fake_endpoint.url)
    fake_endpoint.queue(completion("first part", "", "second part"))
    assert summarize_callable_for(flow=flow)(PROMPT) == "first part\n\nsecond part"


def test_it_removes_nul_characters_from_the_summary(fake_endpoint, flow):
    make_provider(fake_endpoint.url)
    fake_endpoint.queue(completion("found\x00 it"))
    assert summarize_callable_for(flow=flow)(PROMPT) == "found it"


def test_it_caps_an_input_above_64_kb_to_its_head_and_tail(fake_endpoint, flow):
    make_provider(fake_endpoint.url)
    prompt = "HEAD-MARK " + "x" * 200_000 + " TAIL-MARK"
    summarize_callable_for(flow=flow)(prompt)
    sent = fake_endpoint.requests[0]["json"]["messages"][1]["content"]
    assert sent.startswith("HEAD-MARK") and sent.endswith("TAIL-MARK")
    assert 64 * 1024 <= len(sent.encode()) < 64 * 1024 + 200


def test_a_repeated_prompt_is_answered_from_the_cache_and_recorded_as_cached(fake_endpoint, flow):
    make_provider(fake_endpoint.url)
    fake_endpoint.queue(completion("cached summary"))
    summarize = summarize_callable_for(flow=flow)
    assert summarize(PROMPT) == summarize(PROMPT) == "cached summary"
    assert len(fake_endpoint.requests) == 1
    assert list(LLMCall.objects.values_list("cached", "cost_usd")) == [(False, 0.0), (True, 0.0)]


def test_the_flows_own_provider_wins_over_the_default(fake_endpoint, flow):
    make_provider("http://127.0.0.1:9/v1", name="default-one")
    flow.provider = make_provider(fake_endpoint.url, name="flow-one", default=False, model="flow-model")
    flow.save()
    summarize_callable_for(flow=flow)(PROMPT)
    assert fake_endpoint.requests[0]["json"]["model"] == "flow-model"


def test_an_extractive_provider_on_the_flow_means_no_http_call(fake_endpoint, flow):
    make_provider(fake_endpoint.url)
    flow.provider = make_provider("", name="offline", kind="extractive", default=False)
    flow.save()
    assert summarize_callable_for(flow=flow)(PROMPT) == make_extractive()(PROMPT)
    assert fake_endpoint.requests == []


def test_an_empty_completion_is_a_summary_failure_never_an_empty_summary(fake_endpoint, flow):
    make_provider(fake_endpoint.url)
    fake_endpoint.queue(completion("   "))
    with pytest.raises(SummaryFailed, match="no text"):
        summarize_callable_for(flow=flow)(PROMPT)
    assert LLMCall.objects.get().ok is False


def test_compaction_uses_the_agents_model_then_the_fallbacks_on_retryable_errors(fake_endpoint, flow):
    make_provider(fake_endpoint.url, max_attempts=1)
    _compaction_settings(flow, fallback_models="backup-a, backup-b")
    fake_endpoint.queue(json_reply(503, {"error": {"message": "overloaded"}}), completion("from backup"))
    assert summarize_callable_for(flow=flow, purpose="compaction")(PROMPT) == "from backup"
    assert [r["json"]["model"] for r in fake_endpoint.requests] == ["agent-model", "backup-a"]
    assert list(LLMCall.objects.values_list("model", "ok")) == [("agent-model", False), ("backup-a", True)]


def test_compaction_does_not_fall_back_on_a_non_retryable_error(fake_endpoint, flow):
    make_provider(fake_endpoint.url, max_attempts=1)
    _compaction_settings(flow, fallback_models="backup-a")
    fake_endpoint.queue(json_reply(401, {"error": {"message": "bad key"}}))
    with pytest.raises(SummaryFailed, match="HTTP 401"):
        summarize_callable_for(flow=flow, purpose="compaction")(PROMPT)
    assert len(fake_endpoint.requests) == 1


def test_an_explicit_compaction_model_on_a_named_provider_never_falls_back(fake_endpoint, flow):
    make_provider("http://127.0.0.1:9/v1", name="main")
    make_provider(fake_endpoint.url, name="cheap", default=False, max_attempts=2)
    _compaction_settings(flow, compaction_model="cheap/mini-model", fallback_models="backup-a")
    fake_endpoint.queue(*[json_reply(500, {"error": {"message": "boom"}})] * 2)
    with pytest.raises(SummaryFailed, match="HTTP 500"):
        summarize_callable_for(flow=flow, purpose="compaction")(PROMPT)
    assert [r["json"]["model"] for r in fake_endpoint.requests] == ["mini-model", "mini-model"]


def test_a_bare_compaction_model_runs_on_the_default_provider(fake_endpoint, flow):
    make_provider(fake_endpoint.url)
    _compaction_settings(flow, compaction_model="meta-llama/llama-3-8b")
    summarize_callable_for(flow=flow, purpose="compaction")(PROMPT)
    assert fake_endpoint.requests[0]["json"]["model"] == "meta-llama/llama-3-8b"


def test_a_compaction_model_without_any_endpoint_fails_clearly_when_called(flow):
    _compaction_settings(flow, compaction_model="gpt-4o-mini")
    summarize = summarize_callable_for(flow=flow, purpose="compaction")
    with pytest.raises(SummaryFailed, match="no OpenAI-compatible provider"):
        summarize(PROMPT)


def test_an_unknown_purpose_is_refused(flow):
    with pytest.raises(ValueError, match="unknown purpose"):
        plan_for(flow=flow, purpose="poetry")


def test_chat_sends_the_whole_message_list_and_returns_text_and_usage(fake_endpoint, event):
    make_provider(fake_endpoint.url)
    fake_endpoint.queue(completion("reply", prompt_tokens=30, completion_tokens=5))
    messages = [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"},
                {"role": "assistant", "content": None, "reasoning": "hidden",
                 "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "sh", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "ok"}]
    text, usage = chat_callable_for(event=event, max_tokens=16)(messages)
    assert (text, usage) == ("reply", {"prompt_tokens": 30, "completion_tokens": 5, "total_tokens": 35})
    sent = fake_endpoint.requests[0]["json"]
    assert sent["model"] == "agent-model" and sent["max_tokens"] == 16
    assert sent["messages"][2] == {"role": "assistant", "content": "",
                                   "tool_calls": messages[2]["tool_calls"]}
    assert LLMCall.objects.get().event == event


def test_chat_without_an_endpoint_is_a_clear_error(flow):
    with pytest.raises(LLMError, match="no OpenAI-compatible provider"):
        chat_callable_for(flow=flow)


def test_an_error_that_echoes_the_api_key_is_stored_masked(fake_endpoint, flow):
    make_provider(fake_endpoint.url)
    fake_endpoint.queue(json_reply(401, {"error": {"message": "Incorrect API key sk-test-secret-key-1234"}}))
    with pytest.raises(SummaryFailed) as caught:
        summarize_callable_for(flow=flow)(PROMPT)
    stored = LLMCall.objects.get().error
    assert "HTTP 401" in stored and "sk-test-secret-key-1234" not in stored
    assert "sk-test-secret-key-1234" not in str(caught.value)


def test_the_public_surface_is_pinned():
    import flows.config.endpoints
    import flows.pipeline.llm

    assert set(flows.pipeline.llm.__all__) == {
        "summarize_callable_for", "chat_callable_for", "provider_from_env", "plan_for", "Plan", "Target", "PURPOSES",
        "clear_summary_caches", "offline_summarizer", "is_offline", "complete", "Completion", "LLMError",
        "ProviderError", "RetryableProviderError",
        "ContextOverflowError", "SummaryFailed", "SUMMARY_SYSTEM_PROMPT", "COMPACTION_SYSTEM_PROMPT", "calls_held"}
    assert {"provider_from_env", "provider_for", "discover_window", "model_window_for"} \
        <= set(flows.config.endpoints.__all__)
