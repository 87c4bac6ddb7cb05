"""Issue 23 item 6: a per-tool-result summary stays within `max_bp_bytes` and never grows what it replaces.

PentAGI accepts whatever its model returns for an oversized pair; this engine cuts that summary to the limit
(on a line or word boundary, marked with an ellipsis) and keeps the original pair when even the cut summary
would not be smaller. The combined last-section summary is untouched (fact 33 stays as PentAGI has it).
"""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from summarizer.chain.parse import REQUEST_RESPONSE, SUMMARIZATION, parse_chain
from summarizer.passes.stages import CUT_MARK, rotate_section
from summarizer.settings.config import SummarizerConfig
from tests.summarizer.engine_builders import FakeSummarizer, ctx, human, rr_of_size, run_pass

KB = 1024


def _rotate(chain, fake, **cfg):
    ast = parse_chain(chain)
    run_pass(rotate_section(ast.sections[-1], SummarizerConfig(**cfg), ctx()), fake)
    return ast.sections[-1]


def _summary_text(section) -> str:
    return section.body[0].messages()[-1]["content"]


def test_an_oversized_pair_summary_larger_than_the_limit_is_cut_to_the_limit():
    chain = [human("q"), *rr_of_size("c0", 10 * KB), *rr_of_size("c1", 1 * KB)]
    summary = "\n".join(f"- line {i}: 10.0.0.{i % 250} open port {i}" for i in range(200))  # ~7 KB
    section = _rotate(chain, FakeSummarizer(summary), last_sec_bytes=50 * KB, max_bp_bytes=4 * KB)
    text = _summary_text(section)
    assert section.body[0].kind == SUMMARIZATION
    assert len(text.encode("utf-8")) <= 4 * KB and text.endswith(CUT_MARK)
    assert summary.startswith(text.removesuffix(CUT_MARK))
    assert text.removesuffix(CUT_MARK).endswith(("open port 0", "open port 1")) or "\n" not in text[-3:]


def test_a_summary_within_the_limit_is_kept_as_written():
    chain = [human("q"), *rr_of_size("c0", 10 * KB), *rr_of_size("c1", 1 * KB)]
    section = _rotate(chain, FakeSummarizer("short summary"), last_sec_bytes=50 * KB, max_bp_bytes=4 * KB)
    assert _summary_text(section) == "short summary"


def test_the_original_pair_stays_when_the_summary_would_not_be_smaller():
    """A limit near the pair's own size: the cut summary plus its fake call would outgrow the pair."""
    chain = [human("q"), *rr_of_size("c0", 300), *rr_of_size("c1", 100)]
    before = parse_chain(chain).sections[-1].body[0]
    section = _rotate(chain, FakeSummarizer("S" * 5000), last_sec_bytes=50 * KB, max_bp_bytes=299)
    assert section.body[0].kind == REQUEST_RESPONSE and section.body[0] == before


def test_a_cut_never_splits_a_multibyte_character():
    chain = [human("q"), *rr_of_size("c0", 10 * KB), *rr_of_size("c1", 1 * KB)]
    section = _rotate(chain, FakeSummarizer("é" * 6000), last_sec_bytes=50 * KB, max_bp_bytes=4 * KB + 1)
    text = _summary_text(section)
    assert len(text.encode("utf-8")) <= 4 * KB + 1 and set(text.removesuffix(CUT_MARK)) == {"é"}


@settings(max_examples=40, deadline=None)
@given(summary=st.text(min_size=1, max_size=12_000), limit=st.integers(min_value=600, max_value=9_000))
def test_no_oversized_pair_summary_exceeds_the_limit_or_grows_the_pair(summary, limit):
    chain = [human("q"), *rr_of_size("c0", 10 * KB), *rr_of_size("c1", 200)]
    before = parse_chain(chain).sections[-1].body[0]
    section = _rotate(chain, FakeSummarizer(summary), last_sec_bytes=50 * KB, max_bp_bytes=limit)
    first = section.body[0]
    assert first.size <= before.size
    if first.kind == SUMMARIZATION:
        assert len(_summary_text(section).encode("utf-8")) <= limit
