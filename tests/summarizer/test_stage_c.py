"""Stage C: QA collapse of old sections into one summary section — facts 37-42 and §2.c details."""
from __future__ import annotations

import pytest

from summarizer.chain.parse import SUMMARIZATION, SUMMARY_PREFIX, parse_chain
from summarizer.passes.stages import StageError, recent_sections_to_keep, stage_c
from summarizer.settings.config import SummarizerConfig
from tests.summarizer.engine_builders import FakeSummarizer, ai, ctx, human, rr, run_pass, system


def _qa(texts: list[str], questions: list[str] | None = None) -> list[dict]:
    chain = [system("sys")]
    for i, text in enumerate(texts):
        chain += [human((questions or [])[i] if questions else f"Question {i + 1}"), ai(text)]
    return chain


def _collapse(chain, fake=None, keep=1, **cfg):
    ast = parse_chain(chain)
    fake = fake or FakeSummarizer()
    run_pass(stage_c(ast, SummarizerConfig(**cfg), ctx(), keep=keep), fake)
    return ast, fake


def test_under_both_limits_nothing_happens():
    """Fact 37."""
    chain = _qa(["a", "b", "c"])
    ast, fake = _collapse(chain, max_qa_sections=10, max_qa_bytes=10_000)
    assert fake.calls == 0 and ast.to_messages() == chain


def test_the_byte_limit_triggers_a_collapse_of_the_old_answers():
    """Fact 39."""
    ast, fake = _collapse(_qa(["A" * 200, "B" * 200, "short"]), max_qa_bytes=400)
    assert fake.calls == 1 and "AAA" in fake.prompts[0]
    assert len(ast.sections) == 2 and ast.sections[0].body[0].is_summary


def test_both_limits_exceeded_collapse_everything_outside_the_window():
    """Fact 40."""
    ast, fake = _collapse(_qa(["A" * 100, "B" * 100, "C" * 100, "D" * 100]), keep=0,
                          max_qa_sections=2, max_qa_bytes=300)
    assert fake.calls == 1 and "AAA" in fake.prompts[0] and "BBB" in fake.prompts[0]
    assert len(ast.sections) <= 3


def test_human_messages_are_summarized_too_when_asked():
    """Fact 41."""
    ast, fake = _collapse(_qa(["a1", "a2", "a3"]), summ_human_in_qa=True, max_qa_sections=1)
    assert fake.calls == 2
    assert "Question 1" in fake.prompts[0] and "Question 2" in fake.prompts[0]
    assert "<messages>" not in fake.prompts[0] and "<messages>" in fake.prompts[1]
    assert ast.sections[0].header.human == {"role": "user", "content": "Summarized content"}


def test_a_failing_ai_summary_fails_the_stage():
    """Fact 42."""
    with pytest.raises(StageError, match=r"QA \(ai\) summary generation failed"):
        _collapse(_qa(["a", "b", "c"]), FakeSummarizer(fail=True), max_qa_sections=1)


def test_a_failing_human_summary_fails_the_stage():
    """§2.c step 9."""
    with pytest.raises(StageError, match=r"QA \(human\) summary generation failed"):
        _collapse(_qa(["a", "b", "c"]), FakeSummarizer(fail=True), summ_human_in_qa=True, max_qa_sections=1)


def test_the_new_first_section_keeps_the_system_and_joins_old_questions_verbatim():
    """§2.c steps 5 and 8 (quirk 4: verbatim concatenation)."""
    ast, _ = _collapse(_qa(["a1", "a2", "a3"]), max_qa_sections=1)
    first, rest = ast.sections[0], ast.sections[1:]
    assert first.header.system == system("sys")
    assert first.header.human["content"] == [{"type": "text", "text": "Question 1"},
                                             {"type": "text", "text": "Question 2"}]
    assert first.body[0].ai["content"] == SUMMARY_PREFIX + "Summarized content"
    assert [s.header.human["content"] for s in rest] == ["Question 3"]
    assert all(s.header.system is None for s in rest)


def test_tool_activity_in_collapsed_sections_gives_a_summarization_pair():
    """§2.c step 7, no fake signature."""
    chain = [system(), human("q1"), *rr("c1", "out"), human("q2"), ai("a2"), human("q3"), ai("a3")]
    ast, _ = _collapse(chain, max_qa_sections=1)
    pair = ast.sections[0].body[0]
    assert pair.kind == SUMMARIZATION and "reasoning" not in pair.ai["tool_calls"][0]


def test_a_previous_qa_summary_alone_is_not_collapsed_again():
    """§2.c step 3 / §2.g idempotence."""
    ast, fake = _collapse(_qa(["a1", "a2", "a3"]), max_qa_sections=1)
    again, fake2 = _collapse(ast.to_messages(), max_qa_sections=1)
    assert fake2.calls == 0 and again.to_messages() == ast.to_messages()


def test_no_old_user_messages_keeps_a_header_without_one():
    """Resolution 4: human summaries on, nothing to summarize -> no call for it and no user message."""
    chain = [system(), ai("a0" * 100), ai("a1" * 100)]  # a system-only section can only be the last one
    ast, fake = _collapse(chain, keep=0, summ_human_in_qa=True, max_qa_bytes=100)
    assert fake.calls == 1
    assert ast.sections[0].header.human is None and ast.sections[0].header.system == system()


def test_the_kept_window_respects_count_and_bytes():
    """§2.c step 2 (determineRecentSectionsToKeep), pure arithmetic."""
    assert recent_sections_to_keep([100] * 5, 1, 10, 1400) == 4  # 1400 - 1000 margin fits four
    assert recent_sections_to_keep([100] * 5, 1, 2, 100_000) == 2
    assert recent_sections_to_keep([5000, 100], 1, 10, 2000) == 1  # newest alone exceeds: stop there
    assert recent_sections_to_keep([100] * 3, 0, 2, 300) == 0
    assert recent_sections_to_keep([100] * 2, 5, 10, 10_000) == 2


def test_keep_qa_sections_beyond_max_qa_sections_still_keeps_them_all():
    """§2.c step 2: the last min(keep, n) sections are always kept; the count limit only stops older ones."""
    assert recent_sections_to_keep([100] * 5, 3, 2, 100_000) == 3
    assert recent_sections_to_keep([100] * 5, 3, 2, 1_100) == 3  # even over the byte budget (1100 - 1000)
