"""Recognising context-overflow errors and recovering from them (compaction.md §4, acceptance facts 10-17).

Providers word "your prompt does not fit" in many ways: overflow_patterns.py holds the codes, each real
provider's sentence (with the observed count) and a structural rule for unseen wordings. Rate limits,
tokens-per-minute limits, quota, billing and auth errors share words with them ("request too large",
"tokens", "exceeded") but compacting cannot fix them, so they are excluded first.

Recovery is a bounded loop: on an overflow error compact (forced) and retry, at most `max_compactions` times;
a compaction that did not shrink the view stops the loop; an error coming from the summarizer itself is never
answered by another compaction (that is how loops start).
"""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from summarizer.compact.errors import (
    CompactionFailed,
    OverflowRecoveryFailed,
    RetryableProviderError,
    SummarizeAborted,
)
from summarizer.recovery.overflow_patterns import (
    COUNT_PATTERNS,
    LIMIT_PATTERNS,
    NOT_OVERFLOW_SIGNATURES,
    OVERFLOW_CODES,
    PROVIDER_PATTERNS,
    matches_structure,
)

__all__ = ["is_context_overflow_error", "observed_token_count", "observed_context_limit", "is_compaction_failure",
           "is_timeout_error", "is_retryable_provider_error", "call_with_overflow_recovery", "RetryableProviderError",
           "OVERFLOW_SIGNATURES", "NOT_OVERFLOW_SIGNATURES", "MAX_COMPACTIONS_PER_CALL",
           "TIMEOUT_COMPACTION_USAGE_RATIO", "MAX_TIMEOUT_COMPACTIONS"]

MAX_COMPACTIONS_PER_CALL = 3
TIMEOUT_COMPACTION_USAGE_RATIO = 0.65  # a timeout with the prompt this full is probably the prompt's size
MAX_TIMEOUT_COMPACTIONS = 2

# Plain phrases that mean overflow on their own (checked besides overflow_patterns' codes, sentences, structure).
OVERFLOW_SIGNATURES: tuple[str, ...] = (
    "request_too_large", "context length exceeded", "context_length_exceeded", "maximum context length",
    "prompt is too long", "input exceeds the maximum number of tokens",
    "input token count exceeds the maximum number of input tokens", "input is too long for the model",
    "input is too long for requested model", "exceeds the context window", "exceeds model context window",
    "model token limit", "context window exceeds limit", "exceeds the available context size",
    "greater than the context length", "ollama error: context length exceeded", "reduce the length of the messages",
    "prompt too long", "上下文过长", "上下文超出", "超出最大上下文",
)
_TPM = re.compile(r"\btpm\b|\brpm\b")
_HTTP_413 = re.compile(r"\b413\b")
_COMPACTION_FAILURE = re.compile(r"\b(summari[sz]ation|compaction) failed\b")
_RETRYABLE_STATUS_MIN = 500
_RETRYABLE_WORDS = ("overloaded", "timed out", "timeout", "server error", "service unavailable", "bad gateway",
                    "temporarily unavailable")


def _lower(text: Any) -> str:
    return str(text or "").lower()


def _error_text(error: Any) -> str:
    """The message plus the code/type/body an SDK exception carries beside it (they often hold the only code)."""
    parts = [str(error or "")]
    for attr in ("code", "type", "body"):
        value = getattr(error, attr, None) if not isinstance(error, str) else None
        if value:
            parts.append(str(value))
    return " ".join(parts).lower()


def _is_other_failure(low: str) -> bool:
    """Rate limits, quotas, billing and auth: they share words with overflow but compacting cannot fix them."""
    return any(sig in low for sig in NOT_OVERFLOW_SIGNATURES) or bool(_TPM.search(low))


def is_context_overflow_error(text: Any) -> bool:
    """True when a provider error (a message or an SDK exception) says the prompt does not fit the window."""
    low = _error_text(text)
    if not low.strip() or _is_other_failure(low):
        return False
    if any(code in low for code in OVERFLOW_CODES) or any(p.search(low) for p in PROVIDER_PATTERNS):
        return True
    if any(sig in low for sig in OVERFLOW_SIGNATURES) or matches_structure(low):
        return True
    return bool(_HTTP_413.search(low)) and "too large" in low


def observed_token_count(text: Any) -> int | None:
    """The prompt size the provider reports in an overflow message, or None when it carries no count."""
    low = _error_text(text)
    for pattern in (*PROVIDER_PATTERNS, *COUNT_PATTERNS):
        match = pattern.search(low)
        if match and "n" in pattern.groupindex and match.group("n"):
            return int(match.group("n").replace(",", ""))
    return None


def observed_context_limit(text: Any) -> int | None:
    """The context window an overflow message says the provider enforces, or None when it names none."""
    low = _error_text(text)
    for pattern in LIMIT_PATTERNS:
        match = pattern.search(low)
        if match:
            return int(match.group("m").replace(",", ""))
    return None


def is_compaction_failure(error: BaseException | str) -> bool:
    """True for errors raised by the summarizer / compaction itself (never answered by compacting again)."""
    if isinstance(error, CompactionFailed):
        return True
    return bool(_COMPACTION_FAILURE.search(_lower(error)))


def is_timeout_error(error: BaseException) -> bool:
    return isinstance(error, TimeoutError) or "timed out" in _lower(error) or "timeout" in type(error).__name__.lower()


def is_retryable_provider_error(error: BaseException) -> bool:
    """5xx, overload and timeouts: worth another model. Aborts, 4xx and overflow are not (fact 61)."""
    if isinstance(error, SummarizeAborted):
        return False
    if isinstance(error, RetryableProviderError) or is_timeout_error(error):
        return True
    status = getattr(error, "status_code", None) or getattr(error, "status", None)
    if isinstance(status, int):
        return status >= _RETRYABLE_STATUS_MIN
    low = _lower(error)
    return any(word in low for word in _RETRYABLE_WORDS)


def _shrank(before: Sequence[dict[str, Any]], after: Sequence[dict[str, Any]],
            measure: Callable[[Sequence[dict[str, Any]]], int]) -> bool:
    return measure(after) < measure(before)


Compactor = Callable[..., Any]


def _messages_of(result: Any) -> list[dict[str, Any]]:
    messages = getattr(result, "messages", result)
    error = getattr(result, "error", None)
    if error:
        raise CompactionFailed(str(error))
    return list(messages)


def call_with_overflow_recovery(call: Callable[[list[dict[str, Any]]], Any], messages: Sequence[dict[str, Any]], *,
                                compact: Compactor, measure: Callable[[Sequence[dict[str, Any]]], int] | None = None,
                                truncate: Callable[[list[dict[str, Any]]], list[dict[str, Any]]] | None = None,
                                usage_ratio: Callable[[Sequence[dict[str, Any]]], float] | None = None,
                                max_compactions: int = MAX_COMPACTIONS_PER_CALL) -> Any:
    """Call the model with `messages`; on a context overflow compact and retry, within bounds.

    `compact(view, attempt=n, observed_tokens=N|None)` returns a smaller view (a list, or a FitResult whose
    `.error` means failure); `measure(view)` is our token count, used to refuse a compaction that did not
    shrink the view (default: summarizer.tokens.count.count_tokens). `truncate(view)` (optional) is the cheaper
    tool-result truncation tried once when the
    compaction itself fails (fact 12); it does not reset the compaction budget (fact 16). `usage_ratio(view)`
    (optional) enables compaction on timeouts when the prompt fills more than 65% of the window (fact 17).
    Returns the call's result; raises OverflowRecoveryFailed, or the call's own error when it is not an overflow.
    """
    if measure is None:
        from summarizer.tokens.count import count_tokens  # lazy: keeps this module importable alone

        measure = count_tokens
    view = list(messages)
    compactions = timeout_compactions = 0
    truncated = False
    while True:
        try:
            return call(view)
        except Exception as exc:  # the model call's failure decides what happens next
            if is_compaction_failure(exc):
                raise
            overflow = is_context_overflow_error(exc)
            if not overflow and not _timeout_wants_compaction(exc, view, usage_ratio, timeout_compactions):
                raise
            if not overflow:
                timeout_compactions += 1
                view = _try_timeout_compaction(view, compact, measure, timeout_compactions)
                continue
            if compactions >= max_compactions:
                raise OverflowRecoveryFailed(f"the prompt still overflows: {exc}", compactions=compactions) from exc
            compactions += 1
            try:
                smaller = _messages_of(compact(view, attempt=compactions, observed_tokens=observed_token_count(exc)))
            except Exception as failure:  # the summarizer failed: never compact again, maybe truncate once
                if truncate is not None and not truncated:
                    truncated = True
                    cut = truncate(view)
                    if _shrank(view, cut, measure):
                        view = cut
                        continue
                raise OverflowRecoveryFailed(f"compaction failed: {failure}", compactions=compactions) from failure
            if not _shrank(view, smaller, measure):
                raise OverflowRecoveryFailed("compaction did not shrink the view", compactions=compactions) from exc
            view = smaller


def _timeout_wants_compaction(exc: Exception, view: Sequence[dict[str, Any]],
                              usage_ratio: Callable[[Sequence[dict[str, Any]]], float] | None, done: int) -> bool:
    if usage_ratio is None or not is_timeout_error(exc) or done >= MAX_TIMEOUT_COMPACTIONS:
        return False
    return usage_ratio(view) > TIMEOUT_COMPACTION_USAGE_RATIO


def _try_timeout_compaction(view: list[dict[str, Any]], compact: Compactor,
                            measure: Callable[[Sequence[dict[str, Any]]], int], attempt: int) -> list[dict[str, Any]]:
    """A failed or useless timeout compaction keeps the view but still counts toward its cap (fact 17)."""
    try:
        smaller = _messages_of(compact(view, attempt=attempt, observed_tokens=None))
    except Exception:  # a timeout compaction is best effort; the retry decides
        return view
    return smaller if _shrank(view, smaller, measure) else view
