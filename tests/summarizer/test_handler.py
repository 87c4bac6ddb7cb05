"""The summary handler wrapper: 64 KB input cap and the SHA-256 LRU cache (§2.e, Resolution 7)."""
from __future__ import annotations

import asyncio

import pytest

from summarizer.passes.handler import (
    TRUNCATION_MARKER,
    SummaryCache,
    awith_cap_and_cache,
    cached,
    cap_input,
    capped_input,
    with_cap_and_cache,
)

KB = 1024


def test_inputs_up_to_64_kb_pass_unchanged():
    text = "a" * (64 * KB)
    assert cap_input(text) is text


def test_larger_inputs_keep_32_kb_head_and_tail_around_the_marker():
    text = "h" * (40 * KB) + "t" * (40 * KB)
    out = cap_input(text)
    head, tail = out.split(TRUNCATION_MARKER)
    assert head == "h" * (32 * KB) and tail == "t" * (32 * KB)
    assert TRUNCATION_MARKER == "\n\n{TRUNCATED}...\n\n"
    assert capped_input is cap_input


def test_the_cut_never_splits_a_utf8_character():
    text = "é" * (50 * KB)  # 2 bytes each: 100 KB
    head, tail = cap_input("x" + text).split(TRUNCATION_MARKER)
    assert len(head.encode()) <= 32 * KB and len(tail.encode()) <= 32 * KB
    assert len(head.encode()) >= 32 * KB - 3 and len(tail.encode()) >= 32 * KB - 3
    assert set(tail) == {"é"}


def test_the_cache_answers_repeated_prompts_without_a_call():
    calls = []
    wrapped = with_cap_and_cache(lambda p: calls.append(p) or f"sum{len(calls)}")
    assert wrapped("prompt") == "sum1" and wrapped("prompt") == "sum1" and wrapped("other") == "sum2"
    assert len(calls) == 2 and wrapped.cache.hits == 1


def test_the_llm_sees_the_capped_prompt_but_the_key_is_the_full_one():
    seen = []
    wrapped = cached(lambda p: seen.append(p) or "s")
    big_a, big_b = "a" * (70 * KB) + "END1", "a" * (70 * KB) + "END2"
    wrapped(big_a)
    wrapped(big_b)
    assert len(seen) == 2 and all(len(p.encode()) < 65 * KB for p in seen)


def test_the_cache_evicts_the_least_recently_used_entry():
    cache = SummaryCache(max_entries=2)
    cache.put("a", "A")
    cache.put("b", "B")
    assert cache.get("a") == "A"
    cache.put("c", "C")
    assert cache.get("b") is None and cache.get("a") == "A" and len(cache) == 2
    assert SummaryCache().max_entries == 100
    with pytest.raises(ValueError):
        SummaryCache(0)


def test_failures_are_not_cached():
    attempts = []

    def flaky(prompt: str) -> str:
        attempts.append(prompt)
        if len(attempts) == 1:
            raise RuntimeError("boom")
        return "ok"

    wrapped = with_cap_and_cache(flaky)
    with pytest.raises(RuntimeError):
        wrapped("p")
    assert wrapped("p") == "ok" and len(attempts) == 2


def test_the_async_wrapper_caches_too():
    calls = []

    async def summarize(prompt: str) -> str:
        calls.append(prompt)
        return "s"

    wrapped = awith_cap_and_cache(summarize)

    async def twice() -> list[str]:
        return [await wrapped("p"), await wrapped("p")]

    assert asyncio.run(twice()) == ["s", "s"] and len(calls) == 1
