"""summarize_chain end to end (PentAGI `SummarizeChain`) — facts 44-58, failure semantics, lineage, stats."""
from __future__ import annotations

import asyncio
import random
import threading

import pytest

from summarizer import SummarizerConfig, asummarize_chain, check_invariants, parse_chain, summarize_chain
from summarizer.chain.parse import REQUEST_RESPONSE, SUMMARIZATION, SUMMARIZATION_TOOL
from tests.summarizer.engine_builders import FakeSummarizer, ai, call, human, rr, rr_of_size, system, tool

KB = 1024
NO_QA = dict(use_qa=False)


def _summarize(chain, fake=None, **cfg):
    """Run summarize_chain and check fact 58 on every output."""
    fake = fake or FakeSummarizer()
    result = summarize_chain(chain, SummarizerConfig(**cfg), fake, rng=random.Random(5))
    assert result.error is None, result.error
    assert check_invariants(parse_chain(result.messages)) == []
    assert len(result.messages) <= len(chain)
    assert len(result.lineage) == len(result.messages)
    return result


def _grow(chain, additions, **cfg):
    """Append each batch of messages and summarize after it, as the agent loop does after a tool round."""
    fake = FakeSummarizer()
    for batch in additions:
        chain = _summarize(chain + batch, fake, **cfg).messages
    return parse_chain(chain), fake


def test_the_current_section_rotates_under_its_limit():
    """Fact 44."""
    start = [system(), human("Q"), ai("Initial response")]
    ast, _ = _grow(start, [rr_of_size(f"call_{i}", 212) for i in range(5)],
                   last_sec_bytes=500, max_bp_bytes=1000, **NO_QA)
    assert len(ast.sections) == 1
    assert ast.sections[0].body[0].is_summary
    assert ast.sections[0].header.system == system() and ast.sections[0].header.human == human("Q")
    assert ast.sections[0].size <= 500


def test_qa_collapse_keeps_the_system_and_bounds_the_sections():
    """Fact 45."""
    cfg = dict(preserve_last=False, max_qa_sections=2, max_qa_bytes=10_000)
    chain = _summarize([system(), human("Q1"), ai("A1"), human("Q2"), ai("A2")], **cfg).messages
    chain = _summarize(chain + [human("Q3"), ai("A3")], **cfg).messages
    ast = parse_chain(chain)
    assert all(s.body[0].is_summary for s in ast.sections[:-1])
    chain = _summarize(chain + [human("Q4"), ai("A4")], **cfg).messages
    assert len(parse_chain(chain).sections) == 3
    chain = _summarize(chain + [human("Q5"), ai("A5")], **cfg).messages
    ast = parse_chain(chain)
    assert len(ast.sections) <= 3 and ast.sections[0].body[0].is_summary
    assert ast.sections[0].header.system == system()


def test_rotation_and_qa_work_together():
    """Fact 46."""
    cfg = dict(last_sec_bytes=500, max_qa_sections=2)
    ast, _ = _grow([system(), human("Q1"), ai("start")], [rr_of_size(f"c{i}", 200) for i in range(5)], **cfg)
    assert ast.sections[-1].size <= 500 and any(p.is_summary for p in ast.sections[-1].body)
    chain = ast.to_messages()
    for i in range(2, 6):
        chain = _summarize(chain + [human(f"Q{i}"), ai(f"A{i}")], **cfg).messages
    ast = parse_chain(chain)
    assert len(ast.sections) <= 3 and ast.sections[0].body[0].is_summary
    assert ast.sections[0].header.system == system()


def test_tool_activity_survives_rotation():
    """Fact 47."""
    start = [system(), human("Q"), *rr("call_tool", "tool output", name="nmap_scan")]
    ast, _ = _grow(start, [[ai(f"{i}" + "p" * 499)] for i in range(6)], last_sec_bytes=2000, **NO_QA)
    assert len(ast.sections) == 1 and any(p.is_summary for p in ast.sections[0].body)
    assert ast.sections[0].size <= 2500
    kinds = [p.kind for p in ast.sections[0].body]
    assert REQUEST_RESPONSE in kinds or SUMMARIZATION in kinds


def test_many_sections_collapse_to_at_most_three():
    """Fact 48."""
    chain = [system()]
    for i in range(8):
        chain += [human(f"Q{i}"), ai("x" * 500)]
    ast = parse_chain(_summarize(chain, max_qa_sections=2).messages)
    assert len(ast.sections) <= 3 and ast.sections[0].header.system == system()


def test_byte_triggered_qa_bounds_the_total():
    """Fact 49."""
    chain = [system()]
    for i in range(5):
        chain += [human(f"Q{i}"), ai("y" * 200)]
    ast = parse_chain(_summarize(chain, max_qa_bytes=800).messages)
    assert ast.size <= 1000 and ast.sections[0].body[0].is_summary


def test_an_oversized_pair_is_summarized_but_the_newest_pair_never():
    """Fact 50."""
    additions = [[ai("normal")], rr_of_size("big", 17 * KB)] + [[ai(f"small {i}")] for i in range(20)]
    fake = FakeSummarizer()
    chain = [system(), human("Q")]
    for batch in additions:
        chain = _summarize(chain + batch, fake, last_sec_bytes=50 * KB).messages
        assert parse_chain(chain).sections[-1].body[-1].messages() == batch
    ast = parse_chain(chain)
    assert len(ast.sections) == 1 and fake.calls == 1


def test_k_two_without_rotation_or_qa_summarizes_only_older_sections():
    """Fact 51."""
    chain = [system()]
    for i in range(4):
        chain += [human(f"Question {i}"), ai(f"step {i}"), *rr(f"c{i}", f"out {i}")]
    ast = parse_chain(_summarize(chain, keep_qa_sections=2, preserve_last=False, **NO_QA).messages)
    assert [len(s.body) for s in ast.sections] == [1, 1, 2, 2]
    assert all(s.body[0].is_summary for s in ast.sections[:2])
    assert [s.header.human["content"] for s in ast.sections[2:]] == ["Question 2", "Question 3"]


def test_an_old_text_section_becomes_one_summary_and_the_last_is_unchanged():
    """Fact 54."""
    chain = [system(), human("Q1"), ai("c1"), ai("c2"), ai("c3"), human("Q2"), ai("latest")]
    out = _summarize(chain, preserve_last=False).messages
    ast = parse_chain(out)
    assert len(ast.sections[0].body) == 1 and ast.sections[0].body[0].is_summary
    assert out[-2:] == [human("Q2"), ai("latest")]


def test_a_huge_final_tool_result_stays_with_its_call():
    """Fact 56."""
    chain = [system(), human("Q"), ai("a" * 100), ai("b" * 100), *rr("call_big", "r" * (80 * KB))]
    ast = parse_chain(_summarize(chain, last_sec_bytes=500).messages)
    body = ast.sections[0].body
    assert len(body) >= 2 and body[-1].kind == REQUEST_RESPONSE
    assert body[-1].ai["tool_calls"][0]["id"] == "call_big"


def test_a_large_search_result_survives_and_a_second_run_is_stable():
    """Fact 57 (the referenced fact-43 chain is not in our list; an equivalent search chain is used)."""
    chain = [system(), human("Find the parser"), ai("Looking."), human("Search the code"),
             ai(None, call("call_search", "search_code", '{"query": "parse"}')),
             tool("call_search", "match\n" * (9 * KB))]
    first = _summarize(chain)
    ast = parse_chain(first.messages)
    last = ast.sections[-1].body[-1]
    assert len(ast.sections) == 2 and last.kind == REQUEST_RESPONSE
    assert last.ai["tool_calls"][0]["id"] == "call_search"
    assert last.ai["tool_calls"][0]["function"]["name"] == "search_code"
    assert len(last.tools) == 1 and len(last.tools[0]["content"]) > 50 * KB
    assert len(_summarize(first.messages).messages) == len(first.messages)


def test_a_second_run_without_new_messages_calls_nothing_and_changes_nothing():
    """§2.g idempotence."""
    chain = [system()]
    for i in range(6):
        chain += [human(f"Q{i}"), ai(f"step {i}"), *rr(f"c{i}", "o" * 3000)]
    cfg = dict(last_sec_bytes=4000, max_qa_sections=3, max_qa_bytes=9000)
    first = _summarize(chain, **cfg)
    fake = FakeSummarizer()
    second = _summarize(first.messages, fake, **cfg)
    assert fake.calls == 0 and second.messages == first.messages


def test_any_failure_returns_the_input_unchanged_with_an_error():
    """§2.g failure semantics, fact 22 through the entry point."""
    chain = [system(), human("Q1"), ai("a1"), human("Q2"), ai("a2")]
    result = summarize_chain(chain, SummarizerConfig(), FakeSummarizer(fail=True))
    assert result.messages == chain and result.messages is not chain
    assert "summary generation failed" in result.error and result.calls == 1
    assert result.lineage == [[i] for i in range(len(chain))]


def test_bad_input_is_reported_not_raised():
    result = summarize_chain([{"role": "robot"}], SummarizerConfig(), FakeSummarizer())
    assert result.error and "role" in result.error and result.calls == 0


def test_an_empty_chain_is_returned_unchanged():
    result = summarize_chain([], SummarizerConfig(), FakeSummarizer())
    assert result.messages == [] and result.calls == 0 and result.error is None


def test_summary_call_ids_follow_the_given_or_detected_template():
    """Resolution 2."""
    chain = [system(), human("Q1"), *rr("toolu_01", "out"), human("Q2"), ai("a2")]
    detected = _summarize(chain).messages[2]["tool_calls"][0]["id"]
    assert detected.startswith("toolu_") and len(detected) == 30
    given = summarize_chain(chain, SummarizerConfig(), FakeSummarizer(), id_template="sum_{r:6:d}_{f}")
    assert given.messages[2]["tool_calls"][0]["id"].endswith("_" + SUMMARIZATION_TOOL)


def test_lineage_composes_with_what_inputs_already_stood_for():
    """§5 lineage: summary pairs stand for the union of what they replaced, recursively."""
    chain = [system(), human("Q1"), ai("a1"), ai("b1"), human("Q2"), ai("a2")]
    lineage_in = [[0], [1], [2, 3, 4], [5], [6], [7, 8]]
    result = summarize_chain(chain, SummarizerConfig(), FakeSummarizer(), lineage_in=lineage_in)
    assert result.lineage == [[0], [1], [2, 3, 4, 5], [6], [7, 8]]


def test_stats_describe_the_run():
    chain = [system(), human("Q1"), *rr("c1", "o" * 500), human("Q2"), ai("a2")]
    result = _summarize(chain)
    stats = result.stats
    assert stats["messages_before"] == 6 and stats["messages_after"] == 6  # RR -> summary pair: 2 for 2
    assert stats["sections_before"] == 2 and stats["sections_after"] == 2
    assert stats["bytes_before"] > stats["bytes_after"] == parse_chain(result.messages).size
    assert stats["calls"] == 1 and stats["stage_calls"] == {"a": 1, "b": 0, "c": 0}
    assert stats["summarize_input_bytes"] > 500


def test_sync_batches_run_concurrently():
    """§2.g: stage A summarizes sections in parallel (a barrier only opens if three calls overlap)."""
    barrier = threading.Barrier(3, timeout=10)

    def summarize(prompt: str) -> str:
        barrier.wait()
        return "s"

    chain = [system()]
    for i in range(4):
        chain += [human(f"Q{i}"), ai(f"a{i}")]
    result = summarize_chain(chain, SummarizerConfig(), summarize)
    assert result.error is None and result.calls == 3


@pytest.mark.asyncio
async def test_async_batches_are_gathered():
    in_flight = peak = 0

    async def summarize(prompt: str) -> str:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0)
        in_flight -= 1
        return "s"

    chain = [system()]
    for i in range(4):
        chain += [human(f"Q{i}"), ai(f"a{i}")]
    result = await asummarize_chain(chain, SummarizerConfig(), summarize)
    assert result.error is None and result.calls == 3 and peak == 3
    sync = summarize_chain(chain, SummarizerConfig(), lambda p: "s")
    assert result.messages == sync.messages


@pytest.mark.asyncio
async def test_async_failures_keep_the_original_chain():
    async def summarize(prompt: str) -> str:
        raise RuntimeError("down")

    chain = [system(), human("Q1"), ai("a1"), human("Q2"), ai("a2")]
    result = await asummarize_chain(chain, SummarizerConfig(), summarize)
    assert result.messages == chain and "down" in result.error


def test_every_output_reparses_strictly_keeps_invariants_and_never_grows():
    """Fact 58 (the `_summarize` helper also asserts it for every e2e test above)."""
    chain = [system()]
    for i in range(6):
        chain += [human(f"Q{i}"), ai("t" * 300), *rr(f"c{i}", "o" * 2000), ai(f"done {i}")]
    for cfg in (dict(), dict(last_sec_bytes=1500, max_bp_bytes=800), dict(max_qa_sections=2, summ_human_in_qa=True),
                dict(preserve_last=False, use_qa=False, keep_qa_sections=3)):
        result = summarize_chain(chain, SummarizerConfig(**cfg), FakeSummarizer())
        assert result.error is None and check_invariants(parse_chain(result.messages)) == []
        assert len(result.messages) <= len(chain)
