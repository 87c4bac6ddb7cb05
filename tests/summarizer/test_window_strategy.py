"""The window-aware strategy (summarize_chain_for_window): PentAGI's passes only when the view would not fit."""
from __future__ import annotations

import random
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from summarizer import (
    SUMMARIZATION_TOOL,
    SummarizerConfig,
    WindowTarget,
    check_invariants,
    count_tokens,
    parse_chain,
    summarize_chain,
    summarize_chain_for_window,
)
from tests.summarizer.engine_builders import human, rr, system
from tests.summarizer.strategies import chains

AGENT = SummarizerConfig.agent()


def reply(prompt: str) -> str:
    return "short summary"


def failing(prompt: str) -> str:
    raise RuntimeError("model down")


def output(seed: int, size: int) -> str:
    """Tool output that tokenizes like real output (about 4 bytes per token), `size` bytes long."""
    rng = random.Random(seed)
    words = [f"{rng.choice(['open', 'closed', 'host', 'port', 'user', 'path'])}-{rng.randrange(10**6)}"
             for _ in range(size // 6 + 1)]
    return " ".join(words)[:size]


def pair(call_id: str, size: int) -> list[dict]:
    return rr(call_id, output(zlib.crc32(call_id.encode()), size))


def long_session(pairs: int, size: int = 2000) -> list[dict]:
    chain = [system(), human("scan the host")]
    for i in range(pairs):
        chain += pair(f"call_{i:04d}", size)
    return chain


def many_sections(sections: int, pairs: int = 3, size: int = 1500) -> list[dict]:
    chain = [system()]
    for s in range(sections):
        chain.append(human(f"task {s}"))
        for i in range(pairs):
            chain += pair(f"call_{s:02d}{i:02d}", size)
    return chain


def _result(chain, target, config=AGENT, summarize=reply):
    return summarize_chain_for_window(chain, config, summarize, target=target, rng=random.Random(0))


def test_a_view_within_the_trigger_is_returned_unchanged_without_a_call():
    chain = long_session(30)  # ~60 KB: PentAGI's 50 KB section limit would rotate it
    assert summarize_chain(chain, AGENT, reply).calls > 0
    result = _result(chain, WindowTarget(window_tokens=128_000, reserve_tokens=16_000))
    assert result.calls == 0 and result.error is None
    assert result.messages == chain
    assert result.lineage == [[i] for i in range(len(chain))]
    assert result.stats["window"]["triggered"] is False


def test_a_view_over_the_trigger_is_brought_back_to_the_target():
    chain = long_session(40)
    target = WindowTarget(window_tokens=16_384, reserve_tokens=3_276, margin_percent=50)
    assert count_tokens(chain) > target.trigger_tokens
    result = _result(chain, target)
    assert result.error is None and result.calls >= 1
    after = count_tokens(result.messages)
    assert after <= target.trigger_tokens
    assert after >= target.target_tokens // 2  # as little as restores the margin, not everything
    out = parse_chain(result.messages)  # strict: tool pairs stay whole
    assert check_invariants(out) == []
    assert result.messages[-2:] == chain[-2:]  # the newest pair is never summarized
    summary_call = result.messages[2]["tool_calls"][0]
    assert summary_call["function"]["name"] == SUMMARIZATION_TOOL  # PentAGI's summary shape for tool activity


def test_the_margin_leaves_room_so_the_next_turn_makes_no_call():
    chain = long_session(40)
    target = WindowTarget(window_tokens=16_384, reserve_tokens=3_276, margin_percent=50)
    first = _result(chain, target)
    grown = first.messages + pair("call_9000", 2000)
    second = _result(grown, target)
    assert second.calls == 0 and second.messages == grown


def test_old_sections_collapse_into_one_summary_section_and_the_system_prompt_stays():
    chain = many_sections(12)
    target = WindowTarget(window_tokens=16_384, reserve_tokens=3_276)
    result = _result(chain, target)
    out = parse_chain(result.messages)
    assert result.error is None
    assert out.sections[0].header.system == chain[0]
    assert len(out.sections[0].body) == 1 and out.sections[0].body[0].is_summary
    assert out.sections[-1].body[-1].messages() == chain[-2:]
    assert count_tokens(result.messages) <= target.trigger_tokens
    covered = {i for lin in result.lineage for i in lin}
    assert covered == set(range(len(chain)))  # every raw message is still accounted for


def test_a_lower_trigger_share_summarizes_earlier():
    chain = long_session(20)
    full = _result(chain, WindowTarget(window_tokens=32_000, reserve_tokens=6_400))
    share = _result(chain, WindowTarget(window_tokens=32_000, reserve_tokens=6_400, trigger_percent=25))
    assert full.calls == 0
    assert share.calls >= 1 and count_tokens(share.messages) <= 8_000


def test_a_failed_summary_keeps_the_chain_and_says_why():
    chain = many_sections(12)
    result = _result(chain, WindowTarget(window_tokens=16_384, reserve_tokens=3_276), summarize=failing)
    assert result.messages == chain
    assert result.error and "model down" in result.error


def test_costs_less_summarizer_input_than_pentagi_on_a_long_session():
    chain, target = long_session(60), WindowTarget(window_tokens=32_768, reserve_tokens=6_553)
    pentagi, window = summarize_chain(chain, AGENT, reply), _result(chain, target)
    assert window.stats["summarize_input_bytes"] <= pentagi.stats["summarize_input_bytes"]


@pytest.mark.parametrize("kwargs", [{"window_tokens": 0}, {"window_tokens": 100, "reserve_tokens": 100},
                                    {"window_tokens": 100, "trigger_percent": 0},
                                    {"window_tokens": 100, "margin_percent": 95}])
def test_impossible_window_targets_are_refused(kwargs):
    with pytest.raises(ValueError):
        WindowTarget(**kwargs)


@settings(max_examples=60, deadline=None)
@given(chains(), st.integers(300, 4000), st.sampled_from([0, 25, 50, 90]),
       st.sampled_from([SummarizerConfig.agent(), SummarizerConfig.assistant()]), st.sampled_from([0, 50, 500]))
def test_every_window_result_keeps_the_engine_invariants(chain, window, margin, config, input_tokens):
    target = WindowTarget(window_tokens=window, reserve_tokens=window // 5, margin_percent=margin,
                          input_tokens=input_tokens)
    result = _result(chain, target, config)
    assert result.error is None, result.error
    out = parse_chain(result.messages)
    assert check_invariants(out) == []
    assert len(result.messages) <= len(chain) and len(result.lineage) == len(result.messages)
    assert {i for lin in result.lineage for i in lin} == set(range(len(chain)))
    inp = parse_chain(chain)
    if inp.sections and inp.sections[-1].body:
        assert out.sections[-1].body[-1].messages() == inp.sections[-1].body[-1].messages()
    if count_tokens(chain) <= target.trigger_tokens:
        assert result.calls == 0 and result.messages == chain


def _prompts(summarize_log: list[str]):
    def summarize(prompt: str) -> str:
        summarize_log.append(prompt)
        return "short summary"
    return summarize


def test_a_bounded_input_sends_each_call_at_most_the_bound_and_keeps_the_rest_in_the_ledger():
    chain = long_session(40)
    chain[5]["content"] = "found password hunter2 for admin on 10.1.2.3 " + chain[5]["content"][:1500]
    sent: list[str] = []
    target = WindowTarget(window_tokens=16_384, reserve_tokens=3_276, input_tokens=1_000, local_folds=False)
    result = summarize_chain_for_window(chain, AGENT, _prompts(sent), target=target, rng=random.Random(0))
    assert result.error is None and sent
    limit = result.stats["window"]["input_bytes_limit"]
    assert all(len(p.encode()) <= limit + 2_000 for p in sent)  # the bound, plus the prompt's own instructions
    assert all(chain[7]["content"] not in p for p in sent)  # the raw output was left out of what the model read ...
    text = "\n".join(str(m.get("content")) for m in result.messages)
    assert "10.1.2.3" in text  # ... but its identifiers reach the view (the digest, the ledger)
    assert check_invariants(parse_chain(result.messages)) == []
    assert result.messages[-2:] == chain[-2:]


def test_a_bounded_input_costs_less_than_the_whole_span():
    chain = long_session(40)
    target = WindowTarget(window_tokens=16_384, reserve_tokens=3_276)
    whole = _result(chain, target)
    bounded = _result(chain, WindowTarget(window_tokens=16_384, reserve_tokens=3_276, input_tokens=1_000))
    assert bounded.stats["summarize_input_bytes"] < whole.stats["summarize_input_bytes"] // 2
    assert count_tokens(bounded.messages) <= target.trigger_tokens
