"""flows.services.preview_cache: the preview's caches never change what a preview shows."""
from __future__ import annotations

import pytest

from flows.services import preview_cache
from flows.services.preview import chain_preview
from flows.services.preview_cache import cached_summarizer, chain_data, preview_caches_clear

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _empty_caches():
    preview_caches_clear()
    yield
    preview_caches_clear()


def test_a_repeated_prompt_is_answered_from_the_cache():
    calls: list[str] = []

    def summarize(prompt: str) -> str:
        calls.append(prompt)
        return f"summary of {len(prompt)}"

    cached = cached_summarizer(summarize)
    assert cached("a prompt") == cached("a prompt") == "summary of 8"
    assert cached("another") == "summary of 7"
    assert calls == ["a prompt", "another"]


def test_the_chain_is_read_again_once_it_grew(make_chain, tool_round):
    from flows.services import chain_append

    chain = make_chain(tool_round)
    first = chain_data(chain=chain, model=None)
    assert chain_data(chain=chain, model=None) is first and first.seqs == [1, 2, 3, 4, 5]
    chain_append(chain=chain, messages=[{"role": "user", "content": "next"}])
    grown = chain_data(chain=chain, model=None)
    assert grown is not first and grown.seqs[-1] == 6 and grown.raw[-1]["content"] == "next"


def test_a_cached_preview_equals_an_uncached_one(make_chain, tool_round):
    big = tool_round[:3] + [{**tool_round[3], "content": "22/tcp open ssh 10.0.0.5\n" * 2000}] + tool_round[4:]
    chain = make_chain(big + [{"role": "user", "content": "go on"}, {"role": "assistant", "content": "ok"}])
    settings = {"last_sec_bytes": 2048, "max_bp_bytes": 1024}
    cold = chain_preview(chain=chain, settings=settings)
    assert cold["stats"]["calls"] > 0
    warm = chain_preview(chain=chain, settings=settings)
    assert warm == cold
    preview_caches_clear()
    assert chain_preview(chain=chain, settings=settings) == cold


def test_the_caches_stay_bounded():
    lru = preview_cache._Lru[int, int](3)
    for i in range(10):
        lru.put(i, i)
    assert list(lru.items) == [7, 8, 9] and lru.get(2) is None
