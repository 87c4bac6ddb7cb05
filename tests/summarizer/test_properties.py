"""Hypothesis properties of the engine on generated chains and on every corpus file (design rule 9)."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from summarizer import SummarizerConfig, parse_chain
from summarizer.chain.messages import chain_bytes
from tests.conftest import corpus_params, load_corpus
from tests.summarizer.engine_checks import assert_sizes_add_up, assert_summarize_invariants
from tests.summarizer.strategies import chains, small_configs

PROFILES = (SummarizerConfig.agent(), SummarizerConfig.assistant(), SummarizerConfig.restore())


@given(chains())
def test_parsing_then_rendering_gives_the_input_back(chain):
    assert parse_chain(chain).to_messages() == chain


@given(chains())
def test_sizes_add_up_at_every_level(chain):
    ast = parse_chain(chain)
    assert_sizes_add_up(ast)
    assert ast.size == chain_bytes(chain)


@given(chains(), small_configs())
def test_summarizing_keeps_every_invariant(chain, config):
    """Strict re-parse, paired calls, newest pair untouched, lineage, never more messages, idempotence."""
    assert_summarize_invariants(chain, config)


@given(chains(), st.sampled_from(PROFILES))
def test_the_real_profiles_keep_every_invariant(chain, config):
    assert_summarize_invariants(chain, config)


def _corpus_chain(path):
    messages = load_corpus(path)
    try:
        return messages, parse_chain(messages)
    except ValueError:  # e.g. two user messages in a row: the engine merges them (force mode)
        return messages, None


@pytest.mark.parametrize("path", corpus_params())
def test_corpus_files_round_trip_and_sizes_add_up(path):
    messages, strict = _corpus_chain(path)
    ast = strict or parse_chain(messages, force=True)
    if strict is not None:
        assert strict.to_messages() == messages
    repaired = ast.to_messages()
    assert parse_chain(repaired).to_messages() == repaired
    assert_sizes_add_up(ast)


@pytest.mark.parametrize("path", corpus_params())
def test_corpus_files_keep_every_invariant_under_each_profile(path):
    messages, _ = _corpus_chain(path)
    small = SummarizerConfig(last_sec_bytes=4000, max_bp_bytes=2000, max_qa_sections=3, max_qa_bytes=12000)
    for config in (*PROFILES, small):
        assert_summarize_invariants(messages, config)
