"""What can go wrong when calling a model endpoint, as a few exception types callers can act on.

- RetryableProviderError: the endpoint is down, slow, overloaded or failing (connection error, timeout, 5xx,
  429 rate limit). Worth another attempt, or another model (compaction fallbacks).
- ContextOverflowError: the request does not fit the model's window (an HTTP 400 whose text
  `summarizer.is_context_overflow_error` recognises). Never retried as is: the caller must shrink the input.
- ProviderError: anything else the endpoint did wrong (4xx, empty or non-JSON body, no choices, no text).
- SummaryFailed: a summarize callable could not produce a summary; its __cause__ is the provider error.
"""
from __future__ import annotations

import json

import openai

from flows.engine import RetryableProviderError as _CoreRetryableError
from flows.engine import is_context_overflow_error

__all__ = [
    "LLMError", "ProviderError", "RetryableProviderError", "ContextOverflowError", "SummaryFailed",
    "classify_openai_error", "mask_secret",
]

HTTP_TOO_MANY_REQUESTS = 429
HTTP_SERVER_ERROR_MIN = 500
# 429 also means "out of quota / billing": retrying cannot help there.
NOT_RETRYABLE_429_MARKERS = ("insufficient_quota", "quota", "billing")


class LLMError(RuntimeError):
    """Base of every error raised by flows.pipeline.llm. `attempts` is how many HTTP calls were made."""

    retryable = False

    def __init__(self, message: str, *, attempts: int = 0, status: int | None = None) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.status = status  # the HTTP status when the endpoint answered, else None


class ProviderError(LLMError):
    """The endpoint answered with an error or with something that is not a usable completion."""


class RetryableProviderError(ProviderError, _CoreRetryableError):
    """Connection error, timeout, 5xx or rate limit: another attempt (or another model) may succeed.

    Also a summarizer.RetryableProviderError, so the window-fit layer treats it as one.
    """

    retryable = True


class ContextOverflowError(ProviderError):
    """The input is larger than the model's window; str(error) is the provider's own message."""


class SummaryFailed(LLMError):
    """No summary: the endpoint failed or returned nothing usable. Never stored as an empty summary."""


def mask_secret(text: str, secret: str) -> str:
    """Some endpoints echo the key they were sent in their error text; errors are stored and shown."""
    if secret and len(secret) >= 4:
        text = text.replace(secret, "…" + secret[-4:] if len(secret) > 8 else "…")
    return text


def _error_text(exc: openai.APIStatusError) -> str:
    """The provider's message: the JSON error body's message when there is one, else the exception text."""
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return inner["message"]
        return json.dumps(body)[:2000]
    return str(exc)


def classify_openai_error(exc: Exception, *, attempts: int, secret: str = "") -> ProviderError:
    """Map an exception raised by the openai client onto our types (the caller raises it `from exc`).

    `secret` (the API key) is masked wherever the provider's text repeats it.
    """
    error = _classify(exc, attempts=attempts)
    error.args = (mask_secret(str(error), secret),)
    return error


def _classify(exc: Exception, *, attempts: int) -> ProviderError:
    if isinstance(exc, openai.APITimeoutError):
        return RetryableProviderError(f"the model endpoint timed out: {exc}", attempts=attempts)
    if isinstance(exc, openai.APIConnectionError):
        return RetryableProviderError(f"could not reach the model endpoint: {exc}", attempts=attempts)
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        text = _error_text(exc)
        if is_context_overflow_error(text):  # whatever the status: the same request can never succeed
            return ContextOverflowError(text, attempts=attempts, status=status)
        if status == HTTP_TOO_MANY_REQUESTS and not any(m in text.lower() for m in NOT_RETRYABLE_429_MARKERS):
            return RetryableProviderError(f"HTTP 429 (rate limited / overloaded): {text}", attempts=attempts,
                                          status=status)
        if status >= HTTP_SERVER_ERROR_MIN:
            return RetryableProviderError(f"HTTP {status} from the model endpoint: {text}", attempts=attempts,
                                          status=status)
        return ProviderError(f"HTTP {status} from the model endpoint: {text}", attempts=attempts, status=status)
    if isinstance(exc, ValueError):  # json.JSONDecodeError: an empty or truncated body
        return ProviderError(f"the model endpoint returned a body that is not JSON ({exc})", attempts=attempts)
    if isinstance(exc, openai.OpenAIError):
        return ProviderError(f"unusable answer from the model endpoint: {exc}", attempts=attempts)
    raise TypeError(f"not a provider error: {type(exc).__name__}")
