"""Issue 23 item 4: every summarization says which rule fired, in words and numbers."""
from __future__ import annotations

import re

from summarizer import SummarizerConfig, summarize_chain
from summarizer.passes.stages import size_words
from tests.summarizer.engine_builders import FakeSummarizer, ai, human, rr_of_size, system

KB = 1024


def _reason(chain, **cfg) -> str:
    return summarize_chain(chain, SummarizerConfig(**cfg), FakeSummarizer("summary")).reason


def test_sizes_read_as_bytes_kilobytes_and_megabytes():
    assert [size_words(n) for n in (812, 55_603, 3 * KB * KB)] == ["812 B", "54.3 KB", "3.0 MB"]


def test_nothing_summarized_gives_no_reason():
    assert _reason([system(), human("q"), ai("short")]) == ""


def test_a_large_last_section_names_its_size_the_limit_and_the_pairs_folded():
    chain = [human("q"), *[m for i in range(8) for m in rr_of_size(f"c{i}", 2 * KB)]]
    reason = _reason(chain, last_sec_bytes=8 * KB, max_bp_bytes=16 * KB)
    match = re.fullmatch(r"last section ([\d.]+) KB > last_sec_bytes 8,192: (\d+) oldest pairs summarized", reason)
    assert match, reason
    assert float(match.group(1)) > 8 and int(match.group(2)) >= 2


def test_an_oversized_tool_result_names_its_size_and_max_bp_bytes():
    chain = [human("q"), *rr_of_size("c0", 20 * KB), *rr_of_size("c1", 1 * KB)]
    reason = _reason(chain, last_sec_bytes=64 * KB, max_bp_bytes=16 * KB)
    assert reason == "tool result 20.0 KB > max_bp_bytes 16,384: 1 oversized pair summarized alone"


def test_old_sections_and_the_qa_collapse_each_give_their_rule():
    chain = [system()]
    for i in range(6):
        chain += [human(f"question {i}"), ai(f"answer {i} " + "x" * 200)]
    reason = _reason(chain, keep_qa_sections=1, max_qa_sections=3, max_qa_bytes=64 * KB)
    assert reason.startswith("sections 6 > keep_qa_sections 1: 5 older sections condensed to one summary each")
    assert "QA sections 6 > max_qa_sections 3: " in reason and "collapsed into one QA section" in reason
