"""A finished call's usage teaches the provider/tiktoken token ratio: OpenAI's `prompt_tokens`, and Anthropic's
prompt as input + cache reads + cache writes (with caching on, `input_tokens` alone is only the uncached tail)."""
from __future__ import annotations

from typing import Any

import pytest

from flows.config import token_ratio_for
from flows.gateway.records import gateway_call_finish
from flows.models import CallStatus, GatewayCall, ProviderConfig, ProviderKind

pytestmark = pytest.mark.django_db

OURS = {"messages": 900, "tools": 100, "schema": 0}  # our estimate of the request: 1,000 tokens


@pytest.fixture
def anthropic_provider() -> ProviderConfig:
    return ProviderConfig.objects.create(name="ratio-anthropic", kind=ProviderKind.ANTHROPIC,
                                         base_url="http://127.0.0.1:9", model="claude-x")


def _finish(make_chain: Any, provider: ProviderConfig, usage: dict[str, Any], status: str = CallStatus.OK) -> None:
    chain = make_chain()
    call = GatewayCall.objects.create(chain=chain, user=chain.agent.flow.owner, provider=provider,
                                      model="claude-x", budget=dict(OURS))
    gateway_call_finish(call=call, status=status, http_status=200, latency_ms=5, usage=usage)


def test_anthropic_usage_counts_cache_reads_and_writes_into_the_prompt(make_chain, anthropic_provider) -> None:
    _finish(make_chain, anthropic_provider, {"input_tokens": 150, "cache_read_input_tokens": 900,
                                             "cache_creation_input_tokens": 150, "output_tokens": 40})
    assert token_ratio_for(anthropic_provider, "claude-x") == pytest.approx(1.2)


def test_anthropic_usage_without_caching_is_its_input_tokens(make_chain, anthropic_provider) -> None:
    _finish(make_chain, anthropic_provider, {"input_tokens": 1100, "output_tokens": 40})
    assert token_ratio_for(anthropic_provider, "claude-x") == pytest.approx(1.1)


def test_openai_usage_still_teaches_from_prompt_tokens(make_chain, anthropic_provider) -> None:
    _finish(make_chain, anthropic_provider, {"prompt_tokens": 1300, "completion_tokens": 40})
    assert token_ratio_for(anthropic_provider, "claude-x") == pytest.approx(1.3)


@pytest.mark.parametrize("usage,status", [
    ({"input_tokens": 1200, "output_tokens": 1}, CallStatus.UPSTREAM_ERROR),  # a failed call teaches nothing
    ({"input_tokens": True, "cache_read_input_tokens": "900"}, CallStatus.OK),  # not counts: nothing to learn
])
def test_failed_calls_and_non_numeric_usage_teach_nothing(make_chain, anthropic_provider, usage, status) -> None:
    _finish(make_chain, anthropic_provider, usage, status)
    assert token_ratio_for(anthropic_provider, "claude-x") == 1.0
