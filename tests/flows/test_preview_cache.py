"""flows.pipeline.preview_cache: the preview's caches never change what a preview shows."""
from __future__ import annotations

import threading

import pytest

from flows.engine import count_tokens
from flows.ingest import chain_append
from flows.models import Chain, Message
from flows.pipeline import chain_preview, preview_cache
from flows.pipeline.preview_cache import cached_summarizer, chain_data, preview_caches_clear
from tests.app_fixtures import call

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


def test_a_grown_chain_is_extended_by_its_new_rows_only(make_chain, tool_round):
    chain = make_chain(tool_round)
    first = chain_data(chain=chain, model=None)
    assert chain_data(chain=chain, model=None) is first and first.seqs == [1, 2, 3, 4, 5]
    chain_append(chain=chain, messages=[{"role": "user", "content": "next"}])
    chain.refresh_from_db()
    grown = chain_data(chain=chain, model=None)
    assert grown is not first and grown.seqs == [1, 2, 3, 4, 5, 6] and grown.raw[-1]["content"] == "next"
    assert all(a is b for a, b in zip(grown.raw, first.raw, strict=False))  # the old rows were not read again
    assert grown.identifiers is first.identifiers
    preview_caches_clear()
    fresh = chain_data(chain=chain, model=None)
    assert (fresh.raw, fresh.seqs, fresh.bytes, fresh.tokens) == (grown.raw, grown.seqs, grown.bytes, grown.tokens)


def test_stored_token_counts_equal_a_fresh_count_and_missing_ones_are_counted(make_chain, tool_round):
    chain = make_chain(tool_round + [{"role": "user", "content": "and 10.0.0.6?"}])
    model = chain.agent.flow.model_name or None
    data = chain_data(chain=chain, model=model)
    assert data.tokens == count_tokens(data.raw, model=model)
    preview_caches_clear()
    Message.objects.filter(chain=chain, seq__in=[2, 4]).update(token_count=None)  # rows older than the column
    assert chain_data(chain=chain, model=model).tokens == data.tokens


def test_an_older_chain_object_sees_the_chain_as_it_knew_it(make_chain, tool_round):
    chain = make_chain(tool_round)
    before = chain_data(chain=chain, model=None)
    stale = Chain.objects.get(pk=chain.pk)
    chain_append(chain=chain, messages=[{"role": "user", "content": "next"}])
    chain_data(chain=Chain.objects.get(pk=chain.pk), model=None)  # the cache now holds 6 messages
    seen = chain_data(chain=stale, model=None)
    assert (seen.raw, seen.seqs, seen.bytes, seen.tokens) == (before.raw, before.seqs, before.bytes, before.tokens)


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


def _grow(chain: Chain, turn: int) -> Chain:
    call_id = f"call_{turn:024d}"
    chain_append(chain=chain, messages=[
        {"role": "user", "content": f"now scan 10.0.0.{turn}"},
        {"role": "assistant", "content": None, "tool_calls": [call(call_id, arguments=f'{{"input": "nmap {turn}"}}')]},
        {"role": "tool", "tool_call_id": call_id, "content": f"{turn}/tcp open http 10.0.0.{turn}\n" * 300},
        {"role": "assistant", "content": f"Port {turn} is open on 10.0.0.{turn}."}])
    return Chain.objects.select_related("agent__flow").get(pk=chain.pk)


def test_a_preview_after_the_chain_grew_equals_an_uncached_one(make_chain, tool_round):
    big = tool_round[:3] + [{**tool_round[3], "content": "22/tcp open ssh 10.0.0.5\n" * 2000}] + tool_round[4:]
    chain = make_chain(big)
    settings = {"last_sec_bytes": 2048, "max_bp_bytes": 1024, "keep_qa_sections": 1}
    chain_preview(chain=chain, settings=settings)  # the caches now hold the chain and its summaries
    for turn in (7, 8, 9):
        chain = _grow(chain, turn)
        warm = chain_preview(chain=chain, settings=settings)  # extends the cached chain, reuses summaries
        assert preview_cache._summaries.items and warm["stats"]["calls"] > 0
        preview_caches_clear()
        assert chain_preview(chain=chain, settings=settings) == warm


def test_a_prompt_being_summarized_is_waited_for_not_summarized_again():
    entered, release, calls = threading.Event(), threading.Event(), []

    def summarize(prompt: str) -> str:
        calls.append(prompt)
        entered.set()
        release.wait(timeout=30)
        return "the summary"

    cached = cached_summarizer(summarize)
    answers: list[str] = []
    first = threading.Thread(target=lambda: answers.append(cached("same prompt")))
    first.start()
    entered.wait(timeout=30)
    second = threading.Thread(target=lambda: answers.append(cached("same prompt")))
    second.start()
    second.join(timeout=0.5)  # gives it the time to reach the cache; it must then wait for the first
    release.set()
    first.join()
    second.join()
    assert calls == ["same prompt"] and answers == ["the summary", "the summary"]


def test_a_failed_summary_is_retried_by_the_next_caller():
    outcomes = iter([RuntimeError("model down"), "the summary"])

    def summarize(prompt: str) -> str:
        outcome = next(outcomes)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    cached = cached_summarizer(summarize)
    with pytest.raises(RuntimeError):
        cached("a prompt")
    assert cached("a prompt") == "the summary" and not preview_cache._in_flight


def test_the_caches_stay_bounded():
    lru = preview_cache.Lru[int, int](3)
    for i in range(10):
        lru.put(i, i)
    assert list(lru.items) == [7, 8, 9] and lru.get(2) is None
