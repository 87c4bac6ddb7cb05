"""One chat completion against an OpenAI-compatible endpoint, with bounded retries and strict answer checks.

Retries (with exponential back-off) only for errors another attempt can fix: connection errors, timeouts,
5xx and rate limits. A context-overflow 400, an auth error or a garbage answer fails at once. The whole call,
retries and back-off included, ends by `timeout_seconds x max_attempts` (flows.pipeline.llm.deadline): an endpoint
that drips its answer byte by byte cannot hold a worker for hours. Whatever the endpoint returns is checked:
a body that is not a chat completion, no choices, or no text is an error, never an empty summary.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import httpx2
import openai
from openai.types.chat import ChatCompletion, ChatCompletionMessageParam

from flows.config import openai_client_for
from flows.models import ProviderConfig
from flows.pipeline.llm.deadline import DeadlineTransport
from flows.pipeline.llm.errors import ProviderError, RetryableProviderError, classify_openai_error

__all__ = ["Completion", "complete", "sanitize_text", "backoff_seconds", "wire_messages", "total_deadline_seconds",
           "BACKOFF_BASE_SECONDS", "BACKOFF_MAX_SECONDS"]

BACKOFF_BASE_SECONDS = 1.0
BACKOFF_MAX_SECONDS = 10.0
BODY_PREVIEW_CHARS = 200
# Keys of an OpenAI chat message; our extension keys (reasoning, ...) are not sent to providers.
WIRE_KEYS = ("role", "content", "tool_calls", "tool_call_id", "name")


@dataclass(frozen=True)
class Completion:
    text: str
    prompt_tokens: int | None
    completion_tokens: int | None
    attempts: int


def backoff_seconds(attempt: int) -> float:
    """Delay after failed attempt number `attempt` (1-based): 1 s, 2 s, 4 s ... capped."""
    return min(BACKOFF_BASE_SECONDS * 2 ** (attempt - 1), BACKOFF_MAX_SECONDS)


def sanitize_text(text: str) -> str:
    """Valid UTF-8 without NUL characters (PostgreSQL text refuses them), trimmed."""
    return text.encode("utf-8", "replace").decode("utf-8").replace("\x00", "").strip()


def wire_messages(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages as providers accept them: OpenAI keys only; an assistant tool-call message's null content
    becomes "" (llama.cpp's server rejects null there, OpenAI accepts both)."""
    out = []
    for message in messages:
        wire = {key: message[key] for key in WIRE_KEYS if key in message and message[key] not in (None, "")}
        wire.setdefault("content", "")
        out.append(wire)
    return out


def _part_text(part: Any) -> str:
    if isinstance(part, str):
        return part
    if isinstance(part, dict) and isinstance(part.get("text"), str):
        return part["text"]
    return ""


def _choice_text(choice: Any) -> str:
    content = getattr(getattr(choice, "message", None), "content", None)
    if isinstance(content, list):  # some gateways answer with content parts
        content = "".join(_part_text(part) for part in content)
    return sanitize_text(content) if isinstance(content, str) else ""


def _completion_from(response: Any, *, attempts: int) -> Completion:
    if not isinstance(response, ChatCompletion):
        preview = str(response)[:BODY_PREVIEW_CHARS]
        raise ProviderError(f"the model endpoint did not return a chat completion (got {type(response).__name__}:"
                            f" {preview!r})", attempts=attempts)
    if not response.choices:
        raise ProviderError("the model endpoint returned a completion without choices", attempts=attempts)
    texts = [text for text in (_choice_text(choice) for choice in response.choices) if text]
    if not texts:
        reasons = sorted({str(getattr(choice, "finish_reason", "")) for choice in response.choices})
        raise ProviderError(f"the model endpoint returned no text (finish_reason: {', '.join(reasons)})",
                            attempts=attempts)
    usage = response.usage
    return Completion(text="\n\n".join(texts), attempts=attempts,
                      prompt_tokens=getattr(usage, "prompt_tokens", None),
                      completion_tokens=getattr(usage, "completion_tokens", None))


def total_deadline_seconds(provider: ProviderConfig) -> float:
    """The most one complete() call may take, retries and back-off included."""
    return provider.timeout_seconds * max(1, provider.max_attempts)


def _timed_out(exc: httpx2.TimeoutException, *, attempts: int) -> RetryableProviderError:
    # The openai client maps timeouts while waiting for headers; a body read past the deadline surfaces raw.
    return RetryableProviderError(f"the model endpoint timed out: {exc}", attempts=attempts)


def _out_of_time(error: ProviderError, total: float) -> ProviderError:
    return RetryableProviderError(f"gave up after {error.attempts} attempt(s): the call's total deadline of "
                                 f"{total:g} s (timeout x attempts) passed; last error: {error}",
                                 attempts=error.attempts, status=error.status)


def complete(provider: ProviderConfig, model: str, messages: Sequence[dict[str, Any]], *,
             max_tokens: int | None = None, sleep: Callable[[float], None] = time.sleep) -> Completion:
    """Send `messages` to `model` at `provider`, up to provider.max_attempts times on retryable errors, all of
    it within total_deadline_seconds(provider).

    Raises ContextOverflowError, RetryableProviderError (attempts or time exhausted) or ProviderError; each
    carries `.attempts`.
    """
    attempts = max(1, provider.max_attempts)
    limit = max_tokens or provider.max_output_tokens
    transport = DeadlineTransport()
    total = total_deadline_seconds(provider)
    transport.deadline = time.monotonic() + total
    client = openai_client_for(provider, transport=transport)
    attempt = 0
    try:
        while True:
            attempt += 1
            try:
                # our canonical messages are the OpenAI wire shape; the SDK's TypedDicts cannot see that
                wire = cast(list[ChatCompletionMessageParam], wire_messages(messages))
                response = client.chat.completions.create(model=model, messages=wire, max_tokens=limit)
            except (openai.OpenAIError, ValueError, httpx2.TimeoutException) as exc:
                error = (_timed_out(exc, attempts=attempt) if isinstance(exc, httpx2.TimeoutException)
                         else classify_openai_error(exc, attempts=attempt, secret=provider.api_key))
                left = transport.remaining() or 0.0
                if error.retryable and attempt < attempts and left <= 0:
                    raise _out_of_time(error, total) from exc
                if not error.retryable or attempt >= attempts:
                    raise error from exc
                sleep(min(backoff_seconds(attempt), left))
                continue
            return _completion_from(response, attempts=attempt)
    finally:
        client.close()
