"""Retrying a summary call and falling back to other models (acceptance facts 33 and 61).

Retry: 3 attempts with 0.5 s then 1 s between them (no jitter), never after an abort. Fallback: when the
compaction model is *not* set explicitly, a retryable provider error (5xx, overload, timeout) moves on to the
next configured model; an explicit model never falls back, because the operator chose it on purpose (e.g.
a model allowed to see the data).
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TypeVar

from summarizer.compact.errors import SummarizeAborted
from summarizer.recovery.overflow import is_retryable_provider_error

__all__ = ["retry_call", "summarize_with_fallback", "RETRY_ATTEMPTS", "RETRY_DELAYS_SECONDS"]

RETRY_ATTEMPTS = 3
RETRY_DELAYS_SECONDS = (0.5, 1.0)
T = TypeVar("T")


def retry_call(fn: Callable[[], T], *, attempts: int = RETRY_ATTEMPTS,
               delays_seconds: Sequence[float] = RETRY_DELAYS_SECONDS,
               sleep: Callable[[float], None] = time.sleep) -> T:
    """Run `fn` up to `attempts` times, sleeping `delays_seconds[i]` after failure i; aborts are not retried."""
    for attempt in range(1, attempts + 1):
        try:
            return fn()
        except SummarizeAborted:
            raise
        except Exception:
            if attempt >= attempts:
                raise
            sleep(delays_seconds[min(attempt - 1, len(delays_seconds) - 1)] if delays_seconds else 0.0)
    raise ValueError("attempts must be at least 1")


def summarize_with_fallback(prompt: str, *, primary: Callable[[str], str],
                            fallbacks: Sequence[Callable[[str], str]] = (), explicit: bool = False) -> str:
    """`primary(prompt)`, or, when it fails retryably and the model is not explicit, each fallback in order.

    Non-retryable errors (bad request, overflow, abort) are raised at once; when every model failed
    retryably the last error is raised.
    """
    candidates = [primary] if explicit else [primary, *fallbacks]
    last: Exception | None = None
    for summarize in candidates:
        try:
            return summarize(prompt)
        except Exception as exc:  # classify: only retryable errors move on
            if not is_retryable_provider_error(exc):
                raise
            last = exc
    assert last is not None
    raise last
