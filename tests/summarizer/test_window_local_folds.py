"""The window strategy's cheaper folds: spans the offline summarizer folds as well as a model make no call
(`window_local_folds`), a span too large for the input bound reaches the model as its extractive digest, and the
ledger of what the model did not quote is bounded by the summary's budget, not by the input bound."""
from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from summarizer import SummarizerConfig, WindowTarget, check_invariants, count_tokens, parse_chain
from summarizer import summarize_chain_for_window as for_window
from summarizer.chain.nodes import SUMMARY_PREFIX
from summarizer.strategy.bounded import MIN_DIGEST_BYTES
from tests.summarizer.engine_builders import ai, call, human, system, tool
from tests.summarizer.strategies import chains
from tests.summarizer.test_window_bounded import Recorder
from tests.summarizer.test_window_strategy import long_session, output

AGENT = SummarizerConfig.agent()
WINDOW = {"window_tokens": 16_384, "reserve_tokens": 3_276}
INSTRUCTIONS = 2_500  # PentAGI's summary instructions and the prompt's tags around the bounded content


def _text(messages: list[dict]) -> str:
    return "\n".join(str(m.get("content")) for m in messages)


def reasoning_session(steps: int, size: int = 2_000) -> list[dict]:
    """An agent that says what it is doing before each tool call: words only a model can condense."""
    chain = [system(), human("scan the host")]
    for i in range(steps):
        call_id = f"call_{i:04d}"
        chain += [ai(f"Step {i}: the last scan suggests a filtered port, so I will retry with a slower rate "
                     f"and compare the banners before moving on.", call(call_id)),
                  tool(call_id, output(i, size))]
    return chain


def test_a_span_of_tool_output_only_is_folded_without_a_model_call_and_keeps_its_findings():
    chain = long_session(40)
    chain[5]["content"] = "found password hunter2 for admin on 10.1.2.3\n" + chain[5]["content"]
    model = Recorder()
    result = for_window(chain, AGENT, model, target=WindowTarget(**WINDOW, input_tokens=4_000),
                        rng=random.Random(0))
    assert result.error is None and result.calls == 0 and model.prompts == []
    assert result.stats["window"]["local_folds"] >= 1
    assert "offline summarizer" in result.reason
    assert count_tokens(result.messages) <= WindowTarget(**WINDOW).trigger_tokens
    assert "10.1.2.3" in _text(result.messages) and "hunter2" in _text(result.messages)
    assert check_invariants(parse_chain(result.messages)) == [] and result.messages[-2:] == chain[-2:]


def test_turning_local_folds_off_sends_those_folds_to_the_model():
    chain = long_session(40)
    model = Recorder()
    result = for_window(chain, AGENT, model, target=WindowTarget(**WINDOW, input_tokens=4_000, local_folds=False))
    assert result.calls >= 1 and model.prompts and not result.stats["window"]["local_folds"]


def test_a_span_with_the_agents_own_words_goes_to_the_model_as_its_digest_within_the_bound():
    chain = reasoning_session(40)
    model = Recorder()
    result = for_window(chain, AGENT, model, target=WindowTarget(**WINDOW, input_tokens=4_000))
    assert result.error is None and result.calls >= 1 and model.prompts
    limit = result.stats["window"]["input_bytes_limit"]
    assert all(len(p.encode()) <= limit + INSTRUCTIONS for p in model.prompts)
    # distilled content (the digest), not the newest raw output
    assert all(SUMMARY_PREFIX.strip() in p.rsplit("<messages>", 1)[-1] for p in model.prompts)
    assert all(chain[3]["content"] not in p for p in model.prompts)


def test_the_ledger_keeps_what_the_model_did_not_quote_even_under_a_tiny_input_bound():
    chain = reasoning_session(40)
    for i in range(20):
        chain[3 + 2 * i]["content"] = f"host 10.0.7.{i + 10} answers on 445\n" + chain[3 + 2 * i]["content"]
    result = for_window(chain, AGENT, lambda prompt: "short summary", rng=random.Random(0),
                        target=WindowTarget(**WINDOW, input_tokens=60))  # about 240 bytes per call
    assert result.error is None and result.calls >= 1
    kept = [i for i in range(20) if f"10.0.7.{i + 10}" in _text(result.messages)]
    assert len(kept) == 20  # a ledger bounded by a quarter of the input bound kept a handful


@settings(max_examples=60, deadline=None)
@given(chains(), st.integers(300, 4_000), st.sampled_from([0, 50, 90]), st.sampled_from([50, 500, 4_000]))
def test_no_call_is_sent_more_than_its_bound_and_local_folds_never_add_a_call(chain, window, margin, input_tokens):
    targets = [WindowTarget(window_tokens=window, reserve_tokens=window // 5, margin_percent=margin,
                            input_tokens=input_tokens, local_folds=local) for local in (True, False)]
    runs = []
    for target in targets:
        model = Recorder()
        result = for_window(chain, AGENT, model, target=target, rng=random.Random(0))
        assert result.error is None, result.error
        assert check_invariants(parse_chain(result.messages)) == []
        limit = result.stats["window"].get("input_bytes_limit", 0)
        bound = max(limit, MIN_DIGEST_BYTES) + limit + INSTRUCTIONS  # content, the requests' quarter, instructions
        assert all(len(p.encode()) <= bound for p in model.prompts)
        runs.append(result.calls)
    assert runs[0] <= runs[1]
