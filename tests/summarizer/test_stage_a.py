"""Stage A: every section older than the protected ones becomes one summary pair — facts 19-24, 61."""
from __future__ import annotations

import pytest

from summarizer.chain.parse import COMPLETION, REQUEST_RESPONSE, SUMMARIZATION, SUMMARY_PREFIX, parse_chain
from summarizer.passes.shapes import prefixed_completion, summarization_pair
from summarizer.passes.stages import StageError, stage_a
from tests.summarizer.engine_builders import FakeSummarizer, ai, call, ctx, human, rr, run_pass, section_kinds, system


def _two_pair_sections(count: int) -> list[dict]:
    chain = [system()]
    for i in range(count):
        chain += [human(f"Question {i}"), ai(f"thinking {i}"), *rr(f"c{i}", f"result {i}")]
    return chain


def test_no_sections_or_one_section_make_no_call():
    """Fact 19."""
    for chain in ([], [system(), human("q"), ai("a"), ai("b")]):
        fake = FakeSummarizer()
        ast = parse_chain(chain)
        run_pass(stage_a(ast, 1, ctx()), fake)
        assert fake.calls == 0 and ast.to_messages() == chain


def test_sections_that_already_hold_one_summary_are_skipped():
    """Fact 20."""
    s_pair = summarization_pair("Answer 2", call_id="call_" + "a" * 24)
    chain = [system(), human("H1"), prefixed_completion("Answer 1").ai, human("H2"), *s_pair.messages(),
             human("H3"), ai("c1"), ai("c2")]
    ast = parse_chain(chain)
    fake = FakeSummarizer()
    run_pass(stage_a(ast, 1, ctx()), fake)
    assert fake.calls == 0 and ast.to_messages() == chain


def test_a_failing_summarizer_fails_the_stage():
    """Fact 22."""
    ast = parse_chain(_two_pair_sections(2))
    with pytest.raises(StageError, match="summary generation failed"):
        run_pass(stage_a(ast, 1, ctx()), FakeSummarizer(fail=True))


def test_only_sections_outside_the_kept_window_are_summarized():
    """Fact 23."""
    ast = parse_chain(_two_pair_sections(3))
    fake = FakeSummarizer()
    run_pass(stage_a(ast, 2, ctx()), fake)
    assert fake.calls == 1
    assert section_kinds(ast) == [[SUMMARIZATION], [COMPLETION, REQUEST_RESPONSE], [COMPLETION, REQUEST_RESPONSE]]
    assert "Question 0" in fake.prompts[0] and "result 0" in fake.prompts[0]
    assert "Question 1" not in fake.prompts[0]


def test_keeping_at_least_as_many_sections_as_exist_changes_nothing():
    """Fact 24."""
    for count, keep in ((3, 3), (2, 5)):
        chain = _two_pair_sections(count)
        ast = parse_chain(chain)
        fake = FakeSummarizer()
        run_pass(stage_a(ast, keep, ctx()), fake)
        assert fake.calls == 0 and ast.to_messages() == chain


def test_text_only_sections_become_a_prefixed_completion_and_headers_stay():
    """§2.a: only Completions -> prefixed Completion; quirk 3: a lone plain completion is summarized once."""
    chain = [system(), human("q1"), ai("only answer"), human("q2"), ai("now")]
    ast = parse_chain(chain)
    fake = FakeSummarizer("S1")
    run_pass(stage_a(ast, 1, ctx()), fake)
    first = ast.sections[0]
    assert fake.calls == 1 and first.header.human == human("q1") and first.header.system == system()
    assert first.body[0].ai == {"role": "assistant", "content": SUMMARY_PREFIX + "S1"}
    run_pass(stage_a(ast, 1, ctx()), fake)
    assert fake.calls == 1  # prefixed now: skipped forever


def test_an_old_signed_tool_call_is_summarized_without_any_reasoning():
    """Fact 61."""
    chain = [system(), human("q1"),
             ai("t", call("c1", reasoning={"signature": "Z2VtaW5p"}), reasoning={"content": "why", "signature": "x"}),
             {"role": "tool", "tool_call_id": "c1", "content": "out"}, human("q2"), ai("a")]
    ast = parse_chain(chain)
    run_pass(stage_a(ast, 1, ctx()), FakeSummarizer())
    pair = ast.sections[0].body[0]
    assert pair.kind == SUMMARIZATION
    assert "reasoning" not in pair.ai and "reasoning" not in pair.ai["tool_calls"][0]
    assert pair.ai["content"] is None


def test_the_summary_stands_for_every_message_it_replaced():
    """Lineage (§5): the summary pair's messages stand for the replaced body."""
    ast = parse_chain(_two_pair_sections(2))
    run_pass(stage_a(ast, 1, ctx()), FakeSummarizer())
    assert ast.lineage()[:4] == [[0], [1], [2, 3, 4], [2, 3, 4]]
