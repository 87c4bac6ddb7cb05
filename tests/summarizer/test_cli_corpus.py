"""The CLI on every corpus file: the summarized chain is valid and its last section is bounded.

Issue 3 asks that `python -m summarizer summarize` does on the files what the turn-by-turn replay does
(tests/summarizer/test_corpus_replay.py): keep the last section within LAST_SEC_BYTES whenever PentAGI's rules
allow it. Here the whole file is one pass with the default (extractive) summarizer, so the floor is the header,
the newest pair and the summary pair the rotation put in front of them.
"""
from __future__ import annotations

import io
import json

import pytest

from summarizer import SummarizerConfig, check_invariants, parse_chain
from summarizer.cli import main
from tests.conftest import corpus_params, load_corpus

PROFILES = {"agent": SummarizerConfig.agent(), "assistant": SummarizerConfig.assistant()}


def _summarize_with_cli(path, profile: str) -> dict:
    out, err = io.StringIO(), io.StringIO()
    code = main(["summarize", "--profile", profile, "--input", str(path), "--json"], out=out, err=err)
    assert code == 0, err.getvalue()
    return json.loads(out.getvalue())


@pytest.mark.parametrize("profile", sorted(PROFILES))
@pytest.mark.parametrize("path", corpus_params())
def test_the_cli_keeps_each_corpus_file_valid_and_its_last_section_bounded(path, profile):
    report = _summarize_with_cli(path, profile)
    messages, limit = report["messages"], PROFILES[profile].last_sec_bytes
    assert report["error"] is None
    assert len(messages) <= len(load_corpus(path)) and len(report["lineage"]) == len(messages)
    ast = parse_chain(messages)  # strict: the output re-parses without repair
    assert check_invariants(ast) == []
    last = ast.sections[-1]
    if not last.body:
        return
    summary = last.body[0].size if last.body[0].is_summary and len(last.body) > 1 else 0
    floor = last.header.size + last.body[-1].size + summary
    assert last.size <= limit or floor > limit, f"last section {last.size} B over {limit} B although it could fit"
