"""LLMCall rows: one per model call (or summary-cache hit), with usage, our estimate beside it, cost, outcome."""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from flows.engine import count_tokens
from flows.models import LLMCall, ProviderConfig, SummaryEvent
from flows.pipeline.llm.client import Completion
from flows.pipeline.llm.errors import LLMError, mask_secret

__all__ = ["record_call", "calls_held", "held_calls",
           "call_cost_usd", "scrub_secret", "prompt_transcript", "TOKENS_PER_MTOK",
           "ERROR_TEXT_MAX_CHARS", "PROMPT_TEXT_MAX_CHARS", "RESPONSE_TEXT_MAX_CHARS"]

TOKENS_PER_MTOK = 1_000_000
ERROR_TEXT_MAX_CHARS = 4000
PROMPT_TEXT_MAX_CHARS = 64 * 1024  # what the event page shows of the prompt; the rest is counted, not stored
RESPONSE_TEXT_MAX_CHARS = 32 * 1024


# A dry run (compaction preview) must write nothing, yet the model calls it makes are real: the callables built
# inside `calls_held` hand their LLMCall rows to its list unsaved (captured when built, because the engine calls
# them on its own pool threads), so an apply that reuses the dry run's summary can save them on its event.
_held: ContextVar[list[LLMCall] | None] = ContextVar("held_llm_calls", default=None)


@contextmanager
def calls_held() -> Iterator[list[LLMCall]]:
    """Collect, unsaved, the LLMCall rows of the callables built inside the block."""
    calls: list[LLMCall] = []
    token = _held.set(calls)
    try:
        yield calls
    finally:
        _held.reset(token)


def held_calls() -> list[LLMCall] | None:
    """The list a callable built now should hand its rows to (None: save them)."""
    return _held.get()


def call_cost_usd(provider: ProviderConfig | None, prompt_tokens: int, completion_tokens: int) -> float:
    if provider is None:
        return 0.0
    return (prompt_tokens * provider.prompt_cost_per_mtok
            + completion_tokens * provider.completion_cost_per_mtok) / TOKENS_PER_MTOK


def scrub_secret(text: str, provider: ProviderConfig | None) -> str:
    """Stored error text: bounded, and never the raw key (errors are masked at the source too)."""
    return mask_secret(text, provider.api_key if provider is not None else "")[:ERROR_TEXT_MAX_CHARS]


def _capped(text: str, limit: int, provider: ProviderConfig | None) -> str:
    """Stored prompt/answer text: bounded, NUL-free (PostgreSQL text refuses it), never the raw key."""
    text = mask_secret(text, provider.api_key if provider is not None else "").replace("\x00", "\ufffd")
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n… ({len(text) - limit:,} more characters not stored)"


def prompt_transcript(messages: Sequence[dict[str, Any]]) -> str:
    """The prompt as the event page shows it: one "role:" block per message (text parts only)."""
    blocks = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            content = "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        blocks.append(f"{message.get('role', '?')}:\n{content if isinstance(content, str) else ''}")
    return "\n\n".join(blocks)


def _text_bytes(messages: Sequence[dict[str, Any]]) -> int:
    total = 0
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            total += len(content.encode("utf-8"))
    return total


def _billed_tokens(completion: Completion, estimate: int, model: str) -> tuple[int, int]:
    """(prompt, completion) tokens to bill: as reported, else our own estimate of each."""
    prompt = completion.prompt_tokens if completion.prompt_tokens is not None else estimate
    if completion.completion_tokens is not None:
        return prompt, completion.completion_tokens
    return prompt, count_tokens([{"role": "assistant", "content": completion.text}], model=model or None)


def record_call(*, provider: ProviderConfig | None, model: str, messages: Sequence[dict[str, Any]],
                event: SummaryEvent | None, duration_ms: int, completion: Completion | None = None,
                error: LLMError | None = None, cached: bool = False,
                held: list[LLMCall] | None = None) -> LLMCall:
    """Store one call: a completion, a failure (`error`), or a summary-cache hit (`cached`, no HTTP call).

    Provider-reported tokens are kept as reported (None when absent) beside our estimate; failed calls and
    cache hits cost nothing. With `held` (a dry run's list, `calls_held`) the row is appended there unsaved.
    """
    estimate = count_tokens(list(messages), model=model or None)
    call = LLMCall(event=event if event is not None and event.pk else None, provider=provider, model=model,
                   prompt_bytes=_text_bytes(messages), estimated_prompt_tokens=estimate, duration_ms=duration_ms,
                   cached=cached, ok=error is None, attempts=0 if cached else 1,
                   prompt_text=_capped(prompt_transcript(messages), PROMPT_TEXT_MAX_CHARS, provider))
    if completion is not None:
        call.response_text = _capped(completion.text or "", RESPONSE_TEXT_MAX_CHARS, provider)
        call.prompt_tokens, call.completion_tokens = completion.prompt_tokens, completion.completion_tokens
        call.attempts = completion.attempts
        call.cost_usd = call_cost_usd(provider, *_billed_tokens(completion, estimate, model))
    if error is not None:
        call.attempts, call.error = max(error.attempts, 1), scrub_secret(str(error), provider)
    if held is not None:
        held.append(call)
    else:
        call.save()
    return call
