"""Stage B: rotation of the newest section(s) — facts 25-36, 59, 60, 62-64 and the §2.h worked examples."""
from __future__ import annotations

import pytest

from summarizer.chain.parse import COMPLETION, REQUEST_RESPONSE, SUMMARIZATION, SUMMARY_PREFIX, parse_chain
from summarizer.passes.shapes import FAKE_SIGNATURE
from summarizer.passes.stages import StageError, last_section_split, rotate_section
from summarizer.settings.config import SummarizerConfig
from tests.summarizer.engine_builders import (
    FakeSummarizer,
    ai,
    call,
    ctx,
    human,
    rr,
    rr_of_size,
    run_pass,
    system,
    tool,
)

KB = 1024
SIGNED = {"signature": "Z2VtaW5pLXNpZw=="}
THINKING = {"content": "Let me think about the scan.", "signature": "YW50aHJvcGlj"}


def _rotate(chain, fake=None, **cfg):
    ast = parse_chain(chain)
    fake = fake or FakeSummarizer()
    run_pass(rotate_section(ast.sections[-1], SummarizerConfig(**cfg), ctx()), fake)
    return ast.sections[-1], fake


def test_the_worked_example_keeps_what_fits_under_the_threshold():
    """§2.h example 1 (pure split arithmetic, then the real rotation)."""
    assert last_section_split(13, [110, 110, 110, 10], [COMPLETION] * 4, 200, 25) == 2
    section, fake = _rotate([human("Thirteen byte"), ai("a" * 110), ai("b" * 110), ai("c" * 110), ai("d" * 10)],
                            last_sec_bytes=200)
    assert fake.calls == 1
    assert [p.ai["content"][:1] for p in section.body] == ["*", "c", "d"]
    assert section.body[0].ai["content"].startswith(SUMMARY_PREFIX)


def test_the_worked_example_without_reserve_keeps_only_the_last_pair():
    """§2.h example 2, Resolution 1."""
    assert last_section_split(13, [110] * 4, [COMPLETION] * 4, 200, 0) == 3
    section, _ = _rotate([human("Thirteen byte"), *[ai(ch * 110) for ch in "abcd"]],
                         last_sec_bytes=200, last_section_reserve_percent=0)
    assert [p.ai["content"][:1] for p in section.body] == ["*", "d"]


def test_a_section_under_the_limit_is_untouched():
    """Fact 25."""
    chain = [system(), human("q"), ai("short"), ai("answers")]
    section, fake = _rotate(chain, last_sec_bytes=200)
    assert fake.calls == 0 and section.messages() == chain


def test_a_header_over_the_limit_with_an_empty_body_is_untouched():
    """Fact 25."""
    section, fake = _rotate([system("s" * 150), human("h" * 150)], last_sec_bytes=200)
    assert fake.calls == 0 and section.body == []


def test_the_oldest_pairs_are_summarized_and_the_newest_kept():
    """Fact 27."""
    chain = [human("Question"), *rr("call_1", "Tool response", name="test_func"), ai("A" * 70), ai("B" * 70),
             ai("Response 3")]
    section, fake = _rotate(chain, last_sec_bytes=200)
    assert fake.calls == 1
    assert "test_func" in fake.prompts[0] and "Tool response" in fake.prompts[0]
    assert "Response 3" not in fake.prompts[0]
    assert [p.kind for p in section.body] == [SUMMARIZATION, COMPLETION, COMPLETION]


def test_a_failing_combined_summary_fails_the_stage():
    """Fact 28."""
    chain = [human("Question"), *rr("call_1", "Tool response"), ai("A" * 70), ai("B" * 70), ai("Response 3")]
    with pytest.raises(StageError, match="last section summary generation failed"):
        _rotate(chain, FakeSummarizer(fail=True), last_sec_bytes=200)


def test_one_oversized_pair_in_the_middle_is_summarized_alone():
    """Fact 29."""
    big = "z" * (20 * KB)
    chain = [human("q"), ai("normal one"), ai(big), ai("normal two")]
    section, fake = _rotate(chain, last_sec_bytes=50 * KB)
    assert fake.calls == 1 and big in fake.prompts[0] and "normal one" not in fake.prompts[0]
    assert section.body[0].ai == ai("normal one") and section.body[2].ai == ai("normal two")
    assert section.body[1].ai["content"].startswith(SUMMARY_PREFIX)


def test_many_small_pairs_roll_into_one_summary_and_the_last_stays():
    """Fact 32."""
    pairs = [ai(f"This is the response number {i:02d} here") for i in range(20)]
    section, fake = _rotate([human("q"), *pairs], last_sec_bytes=100)
    assert fake.calls == 1 and "number 00" in fake.prompts[0] and "number 01" in fake.prompts[0]
    assert section.body[-1].ai["content"].endswith("19 here") and section.body[0].is_summary


def test_a_summary_larger_than_its_input_is_accepted():
    """Fact 33."""
    chain = [human("q"), *[ai(f"pair {i} " + "p" * 30) for i in range(8)]]
    section, _ = _rotate(chain, FakeSummarizer("L" * 500), last_sec_bytes=100)
    assert section.body[0].ai["content"] == SUMMARY_PREFIX + "L" * 500


def test_oversized_pairs_are_summarized_but_never_the_last_one():
    """Fact 34."""
    chain = [human("q"), *rr_of_size("c0", 20 * KB), *rr_of_size("c1", 20 * KB), *rr_of_size("c2", 20 * KB)]
    section, fake = _rotate(chain, last_sec_bytes=50 * KB)
    assert fake.calls == 2
    assert [p.kind for p in section.body] == [SUMMARIZATION, SUMMARIZATION, REQUEST_RESPONSE]
    again, _ = _rotate(section.messages(), last_sec_bytes=30 * KB)
    assert again.body[-1].kind == REQUEST_RESPONSE and again.body[-1].ai["tool_calls"][0]["id"] == "c2"


@pytest.mark.parametrize("call_reasoning,text_reasoning", [(SIGNED, None), (None, THINKING), (SIGNED, THINKING)])
def test_a_sole_huge_pair_with_reasoning_is_never_summarized(call_reasoning, text_reasoning):
    """Fact 35."""
    chain = [human("q"), ai("", call("c1", reasoning=call_reasoning), reasoning=text_reasoning),
             tool("c1", "r" * (80 * KB))]
    before = parse_chain(chain).sections[-1].body[0]
    section, fake = _rotate(chain, last_sec_bytes=50 * KB)
    assert fake.calls == 0 and section.body[0] == before and section.body[0].size == before.size


def test_earlier_oversized_pairs_go_while_the_signed_current_step_stays():
    """Fact 36."""
    last = [ai("", call("c3"), reasoning=THINKING), tool("c3", "r" * (50 * KB))]
    chain = [human("q"), *rr_of_size("c1", 18 * KB), *rr_of_size("c2", 25 * KB), *last]
    section, _ = _rotate(chain)
    assert all(p.is_summary for p in section.body[:-1])
    assert section.body[-1].messages() == last


def test_an_oversized_signed_call_gets_the_fake_signature():
    """Fact 59."""
    chain = [human("q"), ai(None, call("c1", reasoning=SIGNED)), tool("c1", "r" * (20 * KB)), ai("done")]
    section, _ = _rotate(chain)
    summary_call = section.body[0].ai["tool_calls"][0]
    assert section.body[0].kind == SUMMARIZATION and summary_call["reasoning"] == {"signature": FAKE_SIGNATURE}
    assert section.body[1].ai == ai("done")


def test_an_oversized_unsigned_call_gets_no_signature():
    """Fact 60."""
    chain = [human("q"), *rr("c1", "r" * (20 * KB)), ai("done")]
    section, _ = _rotate(chain)
    assert "reasoning" not in section.body[0].ai["tool_calls"][0] and "reasoning" not in section.body[0].ai


def test_the_fake_signature_also_marks_a_combined_summary():
    """Fact 62 (oversized path with the fact's sizes, then the combined path with a large MaxBP)."""
    chain = [human("q"), ai(None, call("c1", reasoning=SIGNED)), tool("c1", "r" * (30 * KB)), ai("final")]
    section, _ = _rotate(chain, last_sec_bytes=50 * KB, max_bp_bytes=16 * KB)
    assert section.body[0].ai["tool_calls"][0]["reasoning"]["signature"] == FAKE_SIGNATURE
    assert section.body[-1].ai == ai("final")
    chain = [human("q"), ai(None, call("c1", reasoning=SIGNED)), tool("c1", "r" * (30 * KB)),
             *rr_of_size("c2", 15 * KB), ai("f" * (10 * KB))]
    section, fake = _rotate(chain, last_sec_bytes=50 * KB, max_bp_bytes=64 * KB)
    assert fake.calls == 1 and section.body[0].ai["tool_calls"][0]["reasoning"]["signature"] == FAKE_SIGNATURE
    assert [p.kind for p in section.body] == [SUMMARIZATION, REQUEST_RESPONSE, COMPLETION]


def test_text_reasoning_is_copied_in_front_of_an_unsigned_summary_call():
    """Fact 63 (Kimi: reasoning on text, none on the call)."""
    chain = [human("q"), ai("I will scan.", call("c1"), reasoning={"content": "kimi thoughts"}),
             tool("c1", "r" * (20 * KB)), ai("done")]
    section, _ = _rotate(chain)
    summary_ai = section.body[0].ai
    assert summary_ai["content"] == "I will scan." and summary_ai["reasoning"] == {"content": "kimi thoughts"}
    assert "reasoning" not in summary_ai["tool_calls"][0]


def test_text_reasoning_and_a_signed_call_give_both_in_the_summary():
    """Fact 64."""
    chain = [human("q"), ai("I will scan.", call("c1", reasoning=SIGNED), reasoning={"content": "kimi"}),
             tool("c1", "r" * (20 * KB)), ai("done")]
    section, _ = _rotate(chain)
    summary_ai = section.body[0].ai
    assert summary_ai["reasoning"] == {"content": "kimi"} and summary_ai["content"] == "I will scan."
    assert summary_ai["tool_calls"][0]["reasoning"] == {"signature": FAKE_SIGNATURE}


def test_a_lone_previous_summary_is_not_summarized_again():
    """§2.b step 3: exactly one Summarization pair in the prefix is kept."""
    assert last_section_split(0, [300, 100], [SUMMARIZATION, COMPLETION], 200, 25) == 0
    assert last_section_split(0, [300, 100], [COMPLETION, COMPLETION], 200, 25) == 1


def test_failed_oversized_summaries_are_ignored():
    """§2.b step 1: failures there are silent."""
    chain = [human("q"), ai("z" * (20 * KB)), ai("last")]
    section, fake = _rotate(chain, FakeSummarizer(fail=True), last_sec_bytes=50 * KB)
    assert fake.calls == 1 and section.messages() == chain


def test_nothing_is_summarized_when_the_whole_section_fits_the_limit():
    """§2.b step 3, first no-op rule: kept + would-be-summarized bytes within max_bytes keeps everything."""
    assert last_section_split(0, [100, 100], [COMPLETION, COMPLETION], 200, 25) == 0
    assert last_section_split(1, [100, 100], [COMPLETION, COMPLETION], 200, 25) == 1  # the header counts


def test_the_last_pair_alone_over_the_threshold_sends_every_older_pair_to_the_summary():
    """§2.b step 3: the last pair is always kept, even when it alone passes the threshold."""
    assert last_section_split(10, [50, 50, 190], [COMPLETION] * 3, 200, 25) == 2
