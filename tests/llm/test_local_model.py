"""The openai-client path against a real OpenAI-compatible server (llama.cpp + Gemma 3 270M, n_ctx 2048).

The packaged model is a base model: it echoes rather than summarizes, so these tests check the protocol path
(a real completion comes back, is stored, usage is recorded, overflows are recognised and recovered from),
never the quality of what it writes. max_tokens stays small to keep each call to a second or two.
"""
from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from flows.ingest import agent_create, chain_append, flow_create
from flows.models import LLMCall, Outcome, ProviderConfig
from flows.pipeline import chain_summarize, view_current
from flows.pipeline.llm.callables import chat_callable_for, summarize_callable_for
from flows.pipeline.llm.errors import ContextOverflowError, SummaryFailed
from summarizer import (
    call_with_overflow_recovery,
    is_context_overflow_error,
    make_extractive,
    observed_token_count,
    overflow_compactor,
)

from .conftest import MODEL_ALIAS, N_CTX_TOKENS

pytestmark = [pytest.mark.llm, pytest.mark.django_db]

MAX_OUTPUT_TOKENS = 24
# Summaries that go back to a 2048-token model must stay well inside its window; our counter (tiktoken) is
# only an estimate of Gemma's tokenizer, so the fit aims at half the real window.
EXTRACTIVE_BUDGET_BYTES = 1500
KEEP_RECENT_TOKENS = 150
FIT_WINDOW_TOKENS = N_CTX_TOKENS // 2


@pytest.fixture
def local_provider(llama_server: str) -> ProviderConfig:
    return ProviderConfig.objects.create(
        name="local-llama", kind="openai", base_url=llama_server, api_key="", model=MODEL_ALIAS, is_default=True,
        timeout_seconds=120, max_attempts=1, max_output_tokens=MAX_OUTPUT_TOKENS,
        prompt_cost_per_mtok=0.5, completion_cost_per_mtok=1.5)


@pytest.fixture
def flow(local_provider):
    owner = get_user_model().objects.create_user("local-model-owner")
    return flow_create(owner=owner, title="local model", model_name=MODEL_ALIAS)


def _tool_round(call_id: str, command: str, output: str) -> list[dict]:
    call = {"id": call_id, "type": "function", "function": {"name": "terminal", "arguments": f'{{"cmd": "{command}"}}'}}
    return [{"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call_id, "name": "terminal", "content": output}]


def _two_turn_chain() -> list[dict]:
    """Two user turns with tool activity: the older section is what Stage A hands to the model."""
    return [
        {"role": "system", "content": "You are a penetration tester working on the lab host 10.10.5.23 only."},
        {"role": "user", "content": "Which TCP ports are open on 10.10.5.23?"},
        *_tool_round("call_1", "nmap -sV 10.10.5.23", "22/tcp open ssh OpenSSH 8.9p1\n80/tcp open http nginx 1.18.0"),
        {"role": "assistant", "content": "Ports 22 (OpenSSH 8.9p1) and 80 (nginx 1.18.0) are open."},
        {"role": "user", "content": "Check the web server for exposed directories."},
        *_tool_round("call_2", "gobuster dir -u http://10.10.5.23", "/admin (Status: 302)\n/.git (Status: 200)"),
    ]


def _long_conversation(rounds: int = 8) -> list[dict]:
    """Plain question/answer turns (the gemma chat format drops tool messages) far above n_ctx."""
    finding = ("The service on port {port} answered with banner nginx/1.18.{port} and the path /backup-{port}.zip "
               "returned HTTP 200 with 48213 bytes; the archive contains config.php with database credentials. ")
    messages = [{"role": "system", "content": "You are a penetration tester."}]
    for i in range(rounds):
        messages.append({"role": "user", "content": f"Report on service number {i}."})
        messages.append({"role": "assistant", "content": finding.format(port=8000 + i) * 6})
    messages.append({"role": "user", "content": "Summarize the open risks in one sentence."})
    return messages


def test_a_real_completion_is_stored_as_the_summary_of_a_summary_event(flow):
    agent = agent_create(flow=flow, agent_type="pentester")
    chain = agent.chains.get()
    chain_append(chain=chain, messages=_two_turn_chain())
    event = chain_summarize(chain_id=chain.id)
    assert event.outcome == Outcome.OK, event.reason
    assert event.calls >= 1 and event.summary_text.strip()
    assert event.summary_text in [m.get("content") for m in view_current(chain=chain).messages]
    calls = list(LLMCall.objects.filter(event=event))
    assert calls and all(c.ok and c.model == MODEL_ALIAS for c in calls)
    assert all(c.prompt_tokens > 0 and 0 < c.completion_tokens <= MAX_OUTPUT_TOKENS for c in calls)
    assert all(c.estimated_prompt_tokens > 0 and c.cost_usd > 0 for c in calls)


def test_the_summarize_callable_returns_real_text_and_records_usage(flow):
    summary = summarize_callable_for(flow=flow)("<messages>nmap: 22/tcp open ssh, 80/tcp open http</messages>")
    assert summary.strip()
    call = LLMCall.objects.get()
    assert call.ok and call.prompt_tokens > 0 and call.completion_tokens > 0 and call.attempts == 1


def test_a_prompt_larger_than_n_ctx_is_a_recognised_context_overflow(flow):
    chat = chat_callable_for(flow=flow, max_tokens=16)
    with pytest.raises(ContextOverflowError) as caught:
        chat(_long_conversation())
    assert is_context_overflow_error(caught.value)
    assert observed_token_count(caught.value) > N_CTX_TOKENS
    assert LLMCall.objects.get().ok is False


def test_a_summary_prompt_larger_than_n_ctx_fails_without_a_retry(flow):
    with pytest.raises(SummaryFailed) as caught:
        summarize_callable_for(flow=flow)("finding: port 8080 exposes /backup.zip. " * 800)
    assert isinstance(caught.value.__cause__, ContextOverflowError)
    assert LLMCall.objects.get().attempts == 1


def test_an_overflow_is_recovered_by_compacting_and_retrying(flow):
    chat = chat_callable_for(flow=flow, max_tokens=16)
    messages = _long_conversation()
    compactions: list[int] = []
    fit = overflow_compactor(window_tokens=FIT_WINDOW_TOKENS, reserve_tokens=16, keep_recent_tokens=KEEP_RECENT_TOKENS,
                             summarize=make_extractive(budget_bytes=EXTRACTIVE_BUDGET_BYTES))

    def compact(view, *, attempt, observed_tokens):
        compactions.append(attempt)
        return fit(view, attempt=attempt, observed_tokens=observed_tokens)

    text, usage = call_with_overflow_recovery(chat, messages, compact=compact)
    assert compactions == [1]
    assert text.strip() and 0 < usage["prompt_tokens"] < N_CTX_TOKENS
    assert list(LLMCall.objects.values_list("ok", flat=True)) == [False, True]
