"""Replay each corpus transcript turn by turn, summarizing where PentAGI does, and check the invariants.

PentAGI summarizes after every completed tool round (and around a final answer); the chain the agent
keeps is the summarized one, and new messages are appended to it.
"""
from __future__ import annotations

import random
from typing import Any

import pytest

from summarizer import SummarizerConfig, check_invariants, parse_chain, summarize_chain
from summarizer.chain.turns import split_turns as turns
from summarizer.passes.shapes import summarization_pair
from tests.conftest import corpus_params, load_corpus
from tests.summarizer.engine_checks import REPLY, reply

Message = dict[str, Any]
SUMMARY_PAIR_BYTES = summarization_pair(REPLY).size  # the largest summary our fake produces
PROFILES = {"agent": SummarizerConfig.agent(), "assistant": SummarizerConfig.assistant()}


def _check_last_section(chain: list[Message], config: SummarizerConfig) -> None:
    last = parse_chain(chain).sections[-1]
    if not last.body:
        return
    floor = last.header.size + last.body[-1].size + SUMMARY_PAIR_BYTES
    assert last.size <= config.last_sec_bytes or floor > config.last_sec_bytes, \
        f"last section {last.size} B over {config.last_sec_bytes} B although it could fit"


def replay(messages: list[Message], config: SummarizerConfig) -> int:
    chain: list[Message] = []
    calls = 0
    for batch in turns(messages):
        chain = chain + batch
        result = summarize_chain(chain, config, reply, rng=random.Random(len(chain)))
        assert result.error is None, result.error
        assert len(result.messages) <= len(chain)
        assert check_invariants(parse_chain(result.messages)) == []
        answers = [i for i, m in enumerate(batch) if m["role"] == "assistant"]
        newest = batch[answers[-1]:] if answers else []
        assert result.messages[len(result.messages) - len(newest):] == newest  # newest pair never summarized
        chain, calls = result.messages, calls + result.calls
        _check_last_section(chain, config)
    again = summarize_chain(chain, config, reply)
    assert again.calls == 0 and again.messages == chain
    return calls


def test_turns_cut_after_tool_rounds_and_answers():
    msgs = [{"role": "user", "content": "q"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "t", "arguments": "{}"}},
                {"id": "b", "type": "function", "function": {"name": "t", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "a", "content": "1"},
            {"role": "tool", "tool_call_id": "b", "content": "2"},
            {"role": "assistant", "content": "done"}]
    assert [len(b) for b in turns(msgs)] == [4, 1]


@pytest.mark.parametrize("profile", sorted(PROFILES))
@pytest.mark.parametrize("path", corpus_params())
def test_replaying_a_transcript_keeps_the_chain_bounded_and_valid(path, profile):
    messages = load_corpus(path)
    replay(messages, PROFILES[profile])
