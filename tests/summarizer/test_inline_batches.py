"""The offline extractive summarizer runs a batch's prompts in the caller's thread, with the same results.

Threads only help a summarizer that waits (an HTTP model); under the GIL they cannot overlap local computation,
and starting a pool per batch cost a worker's run CPU. A callable marked `INLINE_MARK` skips the pool; one that is
not marked keeps it, so model calls of a batch still run concurrently.
"""
from __future__ import annotations

import threading

from hypothesis import given, settings
from hypothesis import strategies as st

from summarizer import make_extractive
from summarizer.passes.stages import Batch
from summarizer.passes.summarize import INLINE_MARK, _run_batch_sync, runs_inline

PROMPTS = tuple(f"Summarize:\nuser: scan 10.0.{i}.1\nassistant: 22/tcp open ssh on 10.0.{i}.1, hash {i:08x}deadbeef"
                for i in range(5))


def _threads_used(summarize) -> set[int]:
    used: set[int] = set()

    def recording(prompt: str) -> str:
        used.add(threading.get_ident())
        return summarize(prompt)

    if runs_inline(summarize):
        setattr(recording, INLINE_MARK, True)
    _run_batch_sync(recording, Batch("a", PROMPTS))
    return used


def test_the_extractive_summarizer_is_marked_to_run_inline():
    assert runs_inline(make_extractive())
    assert runs_inline(make_extractive(budget_bytes=300))


def test_a_marked_batch_runs_in_the_callers_thread_and_an_unmarked_one_in_a_pool():
    assert _threads_used(make_extractive()) == {threading.get_ident()}
    assert threading.get_ident() not in _threads_used(lambda prompt: prompt[:10])


@settings(max_examples=30, deadline=None)
@given(prompts=st.lists(st.text(max_size=200), min_size=2, max_size=6))
def test_inline_results_are_the_pools_results_in_order(prompts):
    summarize = make_extractive()

    def unmarked(prompt: str) -> str:
        return summarize(prompt)

    batch = Batch("a", tuple(prompts))
    assert _run_batch_sync(summarize, batch) == _run_batch_sync(unmarked, batch)
