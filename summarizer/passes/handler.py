"""What PentAGI keeps in its summary handler, around the LLM call (Resolution 7): an input cap and a cache.

The cap keeps a prompt's head and tail when it is larger than the summarizer model should get; the cache
makes re-summarizing identical text free (PentAGI: LRU of 100 entries keyed by SHA-256, no expiry).
"""
from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable

__all__ = [
    "INPUT_CAP_BYTES", "INPUT_HALF_BYTES", "TRUNCATION_MARKER", "CACHE_MAX_ENTRIES", "cap_input", "capped_input",
    "SummaryCache", "prompt_key", "with_cap_and_cache", "cached", "awith_cap_and_cache",
]

INPUT_HALF_BYTES = 32 * 1024
INPUT_CAP_BYTES = 2 * INPUT_HALF_BYTES
TRUNCATION_MARKER = "\n\n{TRUNCATED}...\n\n"
CACHE_MAX_ENTRIES = 100


def _is_continuation(byte: int) -> bool:
    return byte & 0xC0 == 0x80


def cap_input(text: str) -> str:
    """Above 64 KB (UTF-8) keep the first and last 32 KB around a marker, never splitting a character."""
    data = text.encode("utf-8")
    if len(data) <= INPUT_CAP_BYTES:
        return text
    head_end = INPUT_HALF_BYTES
    while head_end > 0 and _is_continuation(data[head_end]):
        head_end -= 1  # data[head_end] starts the first character left out
    tail_start = len(data) - INPUT_HALF_BYTES
    while tail_start < len(data) and _is_continuation(data[tail_start]):
        tail_start += 1
    return data[:head_end].decode("utf-8") + TRUNCATION_MARKER + data[tail_start:].decode("utf-8")


capped_input = cap_input  # name used in the helpers' contract


def prompt_key(prompt: str) -> str:
    return hashlib.sha256(prompt.encode("utf-8")).hexdigest()


class SummaryCache:
    """Thread-safe LRU of summaries keyed by the SHA-256 of the full (uncapped) prompt."""

    def __init__(self, max_entries: int = CACHE_MAX_ENTRIES) -> None:
        if max_entries <= 0:
            raise ValueError("max_entries must be positive")
        self.max_entries = max_entries
        self._items: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, prompt: str) -> str | None:
        key = prompt_key(prompt)
        with self._lock:
            if key not in self._items:
                self.misses += 1
                return None
            self._items.move_to_end(key)
            self.hits += 1
            return self._items[key]

    def put(self, prompt: str, summary: str) -> None:
        key = prompt_key(prompt)
        with self._lock:
            self._items[key] = summary
            self._items.move_to_end(key)
            while len(self._items) > self.max_entries:
                self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)


def with_cap_and_cache(summarize: Callable[[str], str], cache: SummaryCache | None = None) -> Callable[[str], str]:
    """Wrap a summarize callable: cached answers first, else the capped prompt goes to the LLM."""
    cache = cache if cache is not None else SummaryCache()

    def wrapped(prompt: str) -> str:
        hit = cache.get(prompt)
        if hit is not None:
            return hit
        summary = summarize(cap_input(prompt))
        cache.put(prompt, summary)
        return summary

    wrapped.cache = cache  # type: ignore[attr-defined]
    return wrapped


def cached(summarize: Callable[[str], str], cache: SummaryCache | None = None) -> Callable[[str], str]:
    return with_cap_and_cache(summarize, cache)


def awith_cap_and_cache(summarize: Callable[[str], Awaitable[str]],
                        cache: SummaryCache | None = None) -> Callable[[str], Awaitable[str]]:
    """The same wrapper for an async summarize callable."""
    cache = cache if cache is not None else SummaryCache()

    async def wrapped(prompt: str) -> str:
        hit = cache.get(prompt)
        if hit is not None:
            return hit
        summary = await summarize(cap_input(prompt))
        cache.put(prompt, summary)
        return summary

    wrapped.cache = cache  # type: ignore[attr-defined]
    return wrapped
