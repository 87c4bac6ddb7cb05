"""Overflow signatures, observed token counts and the bounded recovery loop (compaction.md §4)."""
from __future__ import annotations

import pytest

from summarizer.compact.errors import CompactionFailed, OverflowRecoveryFailed, RetryableProviderError
from summarizer.recovery.overflow import (
    OVERFLOW_SIGNATURES,
    call_with_overflow_recovery,
    is_compaction_failure,
    is_context_overflow_error,
    is_retryable_provider_error,
    observed_token_count,
)

OVERFLOW_TEXTS = [
    "Error code: 413 - {'type': 'error', 'error': {'type': 'request_too_large'}}",
    "This model's maximum context length is 8192 tokens. However, you requested 10603 tokens",
    "context_length_exceeded", "Context length exceeded", "prompt is too long: 215000 tokens > 200000 maximum",
    "Prompt too long", "The input exceeds the maximum number of tokens",
    "The input token count exceeds the maximum number of input tokens allowed",
    "Input is too long for the model", "input is too long for requested model",
    "Your request exceeds the context window", "request exceeds model context window",
    "model token limit reached", "context window exceeds limit",
    "the request exceeds the available context size, try increasing it",
    "Trying to keep the first 9000 tokens when context the overflows. greater than the context length",
    "ollama error: context length exceeded",
    "Prompt contains 40000 tokens, too large for model with 32768 maximum context length",
    "Please reduce the length of the messages or completion.", "HTTP 413: Payload Too Large",
    "错误：上下文过长", "上下文超出限制", "请求超出最大上下文长度",
]
NOT_OVERFLOW_TEXTS = [
    "Rate limit reached for gpt-4o",
    "Request too large for gpt-4 on tokens per min (TPM): Limit 30000, Requested 41000",
    "You exceeded your current quota, please check your plan and billing details", "insufficient_quota",
    "429 Too Many Requests", "Internal server error", "", "invalid api key", "413 but nothing else",
]


@pytest.mark.parametrize("text", OVERFLOW_TEXTS)
def test_it_recognises_every_overflow_signature(text):
    assert is_context_overflow_error(text) is True


@pytest.mark.parametrize("text", NOT_OVERFLOW_TEXTS)
def test_rate_limits_quota_and_billing_are_not_overflow(text):
    assert is_context_overflow_error(text) is False


def test_every_listed_signature_is_recognised_on_its_own():
    for signature in OVERFLOW_SIGNATURES:
        assert is_context_overflow_error(signature.upper()), signature


@pytest.mark.parametrize("text,count", [
    ("prompt is too long: 215000 tokens > 200000 maximum", 215000),
    ("This model's maximum context length is 8192 tokens. However, you requested 9000 tokens", 9000),
    ("However, your messages resulted in 10603 tokens. Please reduce the length", 10603),
    ("you requested 10603 tokens (10000 in the messages, 603 in the completion)", 10603),
    ("input length and `max_tokens` exceed context limit: 188240 + 21333 > 200000", 188240),
    ("context_length_exceeded", None), ("", None),
])
def test_it_reads_the_observed_token_count(text, count):
    assert observed_token_count(text) == count


def test_errors_from_the_summarizer_are_compaction_failures():
    assert is_compaction_failure("Summarization failed: context overflow")
    assert is_compaction_failure(CompactionFailed("audit"))
    assert not is_compaction_failure("context_length_exceeded")


def test_retryable_provider_errors_are_5xx_overload_and_timeouts():
    class StatusError(Exception):
        def __init__(self, status_code):
            super().__init__(f"status {status_code}")
            self.status_code = status_code

    assert is_retryable_provider_error(RetryableProviderError("503"))
    assert is_retryable_provider_error(StatusError(503))
    assert is_retryable_provider_error(TimeoutError("read timed out"))
    assert is_retryable_provider_error(RuntimeError("model is overloaded"))
    assert not is_retryable_provider_error(StatusError(400))
    assert not is_retryable_provider_error(ValueError("bad request"))


def _measure(view):
    return sum(len(str(m.get("content") or "")) for m in view)


class Provider:
    """A model call that overflows until the view is at most `limit` chars."""

    def __init__(self, limit, error="context_length_exceeded"):
        self.limit, self.error, self.calls = limit, error, 0

    def __call__(self, view):
        self.calls += 1
        if _measure(view) > self.limit:
            raise RuntimeError(self.error)
        return "answer"


def _halving(view, *, attempt, observed_tokens):
    return [{**m, "content": str(m["content"])[: len(str(m["content"])) // 2]} for m in view]


VIEW = [{"role": "user", "content": "x" * 800}]


def test_fact_10_overflow_compacts_then_retries_the_prompt():
    """Fact 10: a request_too_large error triggers a compaction, then the prompt is retried."""
    provider = Provider(500, error="request_too_large")
    assert call_with_overflow_recovery(provider, VIEW, compact=_halving, measure=_measure) == "answer"
    assert provider.calls == 2


def test_fact_11_the_observed_count_reaches_the_compactor():
    """Fact 11: "prompt is too long: N tokens > M maximum" passes N to the compaction."""
    seen = []

    def compact(view, *, attempt, observed_tokens):
        seen.append(observed_tokens)
        return _halving(view, attempt=attempt, observed_tokens=observed_tokens)

    call_with_overflow_recovery(Provider(500, "prompt is too long: 215000 tokens > 200000 maximum"), VIEW,
                                compact=compact, measure=_measure)
    assert seen == [215000]


def test_fact_12_failed_compaction_is_not_retried_but_truncation_runs_once():
    """Fact 12: compaction fails -> no second compaction; a truncation attempt runs; else an error."""
    compactions = []

    def failing(view, *, attempt, observed_tokens):
        compactions.append(attempt)
        raise CompactionFailed("summary audit failed twice")

    truncations = []

    def truncate(view):
        truncations.append(1)
        return [{**m, "content": m["content"][:400]} for m in view]

    assert call_with_overflow_recovery(Provider(500), VIEW, compact=failing, truncate=truncate,
                                       measure=_measure) == "answer"
    assert compactions == [1] and truncations == [1]
    with pytest.raises(OverflowRecoveryFailed, match="compaction failed"):
        call_with_overflow_recovery(Provider(500), VIEW, compact=failing, measure=_measure)


def test_fact_13_persistent_overflow_gives_up_after_exactly_three_compactions():
    """Fact 13: persistent overflow -> exactly 3 compactions, then a clear error; success on the 2nd works."""
    attempts = []

    def compact(view, *, attempt, observed_tokens):
        attempts.append(attempt)
        return _halving(view, attempt=attempt, observed_tokens=observed_tokens)

    with pytest.raises(OverflowRecoveryFailed) as info:
        call_with_overflow_recovery(Provider(1), VIEW, compact=compact, measure=_measure)
    assert attempts == [1, 2, 3] and info.value.compactions == 3
    attempts.clear()
    assert call_with_overflow_recovery(Provider(200), VIEW, compact=compact, measure=_measure) == "answer"
    assert attempts == [1, 2]


def test_fact_14_a_summarizer_failure_from_the_call_is_never_compacted():
    """Fact 14: "summarization failed ... context overflow" is raised as is, no compaction attempt."""
    called = []
    with pytest.raises(RuntimeError, match="summarization failed"):
        call_with_overflow_recovery(Provider(0, "summarization failed: context overflow"), VIEW,
                                    compact=lambda v, **k: called.append(1) or v, measure=_measure)
    assert called == []


def test_fact_15_a_stale_overflow_in_history_does_not_make_a_rate_limit_an_overflow():
    """Fact 15: an old assistant overflow message in history plus a current non-overflow error -> no compaction."""
    history = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "context_length_exceeded"}]
    called = []
    with pytest.raises(RuntimeError, match="Rate limit"):
        call_with_overflow_recovery(Provider(0, "Rate limit reached"), history,
                                    compact=lambda v, **k: called.append(1) or v, measure=_measure)
    assert called == []


def test_fact_16_truncation_does_not_reset_the_compaction_budget():
    """Fact 16: after a truncation, the compactions already spent still count toward the cap of 3."""
    attempts = []

    def compact(view, *, attempt, observed_tokens):
        attempts.append(attempt)
        if attempt == 1:
            raise CompactionFailed("boom")
        return _halving(view, attempt=attempt, observed_tokens=observed_tokens)

    with pytest.raises(OverflowRecoveryFailed) as info:
        call_with_overflow_recovery(Provider(1), VIEW, compact=compact, measure=_measure,
                                    truncate=lambda v: [{**m, "content": m["content"][:700]} for m in v])
    assert attempts == [1, 2, 3] and info.value.compactions == 3


def test_a_compaction_that_does_not_shrink_the_view_stops_the_loop():
    with pytest.raises(OverflowRecoveryFailed, match="did not shrink"):
        call_with_overflow_recovery(Provider(1), VIEW, compact=lambda v, **k: list(v), measure=_measure)


def test_fact_17_timeouts_compact_only_at_high_usage_and_at_most_twice():
    """Fact 17: a timeout at >65% usage compacts and retries; low usage does not; after 2 timeout compactions
    the timeout propagates; a failed timeout compaction still counts toward that cap."""
    class Slow:
        def __init__(self, ok_below):
            self.ok_below, self.calls = ok_below, 0

        def __call__(self, view):
            self.calls += 1
            if _measure(view) > self.ok_below:
                raise TimeoutError("request timed out")
            return "answer"

    assert call_with_overflow_recovery(Slow(500), VIEW, compact=_halving, measure=_measure,
                                       usage_ratio=lambda v: 0.9) == "answer"
    with pytest.raises(TimeoutError):
        call_with_overflow_recovery(Slow(500), VIEW, compact=_halving, measure=_measure, usage_ratio=lambda v: 0.3)
    attempts = []

    def failing(view, *, attempt, observed_tokens):
        attempts.append(attempt)
        raise CompactionFailed("boom")

    slow = Slow(1)
    with pytest.raises(TimeoutError):
        call_with_overflow_recovery(slow, VIEW, compact=failing, measure=_measure, usage_ratio=lambda v: 0.9)
    assert attempts == [1, 2] and slow.calls == 3
