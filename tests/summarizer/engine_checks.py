"""Invariants every summarize_chain output must satisfy (used by the property tests and the corpus replay)."""
from __future__ import annotations

import random
from typing import Any

from summarizer import SummarizerConfig, check_invariants, parse_chain, summarize_chain
from summarizer.chain.messages import call_names, chain_bytes, message_size
from summarizer.chain.nodes import COMPLETION, ChainAST
from summarizer.passes.stages import last_section_split

Message = dict[str, Any]
REPLY = "S"


def reply(prompt: str) -> str:
    return REPLY


def assert_sizes_add_up(ast: ChainAST) -> None:
    for sec in ast.sections:
        assert sec.header.size == sum(message_size(m) for m in sec.header.messages())
        for pair in sec.body:
            names = call_names([pair.ai])
            assert pair.size == message_size(pair.ai) + sum(message_size(t, names) for t in pair.tools)
        assert sec.size == sec.header.size + sum(p.size for p in sec.body)
    assert ast.size == sum(s.size for s in ast.sections) == chain_bytes(ast.to_messages())


def _quirk_one_expected(ast: ChainAST, config: SummarizerConfig) -> bool:
    """True when a protected section would roll again: only PentAGI quirk 1 (a lone prefixed summary) may."""
    if not config.preserve_last:
        return False
    expected = False
    for sec in ast.sections[max(len(ast.sections) - config.keep_qa_sections, 0):]:
        if sec.size <= config.last_sec_bytes:
            continue
        old = last_section_split(sec.header.size, [p.size for p in sec.body], [p.kind for p in sec.body],
                                 config.last_sec_bytes, config.last_section_reserve_percent)
        if old:
            assert old == 1 and sec.body[0].kind == COMPLETION and sec.body[0].is_summary, \
                "a protected section would be re-summarized for a reason other than quirk 1"
            expected = True
    return expected


def assert_summarize_invariants(chain: list[Message], config: SummarizerConfig) -> Any:
    """Run summarize_chain on a chain without pending calls and check every engine invariant."""
    result = summarize_chain(chain, config, reply, rng=random.Random(0))
    assert result.error is None, result.error
    out = parse_chain(result.messages)  # strict: raises if the output is not a valid chain
    assert check_invariants(out) == []
    assert_sizes_add_up(out)
    assert len(result.messages) <= len(chain)
    assert len(result.lineage) == len(result.messages)
    assert all(lin and lin == sorted(set(lin)) for lin in result.lineage)
    inp = parse_chain(chain, force=True)
    covered = {i for lin in inp.lineage() for i in lin}
    assert {i for lin in result.lineage for i in lin} == covered
    if inp.sections and inp.sections[-1].body:
        assert out.sections[-1].body[-1].messages() == inp.sections[-1].body[-1].messages()
    second = summarize_chain(result.messages, config, reply, rng=random.Random(1))
    assert second.error is None
    if not _quirk_one_expected(out, config):
        assert second.calls == 0 and second.messages == result.messages
    return result
