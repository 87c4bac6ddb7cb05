"""The window strategy's cost bounds: earlier summaries carried forward unsent, bounded summaries and inputs,
hysteresis on the part a fold can free, and a window fit that spends no call on a view it cannot fit."""
from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from summarizer import (
    SUMMARIZATION_TOOL,
    ContextTooLarge,
    SummarizerConfig,
    WindowTarget,
    check_invariants,
    count_tokens,
    fit_to_window,
    make_extractive,
    parse_chain,
    summarize_chain_for_window,
)
from summarizer.chain.nodes import SUMMARY_PREFIX
from summarizer.passes.prompts import INSTRUCTIONS_BOUNDED, INSTRUCTIONS_MESSAGES_ONLY, INSTRUCTIONS_WITH_TASKS
from summarizer.strategy.bounded import merge_summaries
from summarizer.strategy.window import INPUT_SHARE
from tests.summarizer.engine_builders import ai, human, rr, system, tool
from tests.summarizer.strategies import chains
from tests.summarizer.test_window_strategy import long_session, pair

AGENT = SummarizerConfig.agent()
# Every fold calls the model here (these spans are tool output only, which local folds would answer without one)
TARGET = WindowTarget(window_tokens=16_384, reserve_tokens=3_276, input_tokens=4_000, local_folds=False)
# What a bounded prompt may hold besides its bounded content: the short instructions and the tags around them
FRAME = len(f"<instructions>{INSTRUCTIONS_BOUNDED}</instructions>\n\n".encode()) + 300


class Recorder:
    """The offline summarizer, recording every prompt it is sent."""

    def __init__(self) -> None:
        self.prompts: list[str] = []
        self._summarize = make_extractive()

    def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        return self._summarize(prompt)


def replay(chain: list[dict], target: WindowTarget, model: Recorder, step: int = 2) -> list[dict]:
    """The chain handed over `step` messages at a time, each turn summarized from the previous view."""
    view: list[dict] = chain[:2]
    for start in range(2, len(chain), step):
        result = summarize_chain_for_window(view + chain[start:start + step], AGENT, model, target=target,
                                            rng=random.Random(0))
        assert result.error is None, result.error
        view = result.messages
    return view


def _summaries(view: list[dict]) -> list[str]:
    ids = {c["id"] for m in view for c in m.get("tool_calls") or () if c["function"]["name"] == SUMMARIZATION_TOOL}
    return [m["content"] for m in view if m.get("role") == "tool" and m.get("tool_call_id") in ids]


def test_an_earlier_summary_is_never_sent_to_the_model_again_yet_its_findings_stay():
    chain = long_session(90)
    chain[3]["content"] = "found password hunter2 for admin on 10.1.2.3\n" + chain[3]["content"]
    model = Recorder()
    view = replay(chain, TARGET, model)
    assert len(model.prompts) >= 3  # several folds, each after the first with an earlier summary in its span
    assert all(f"<tool_call name=\"{SUMMARIZATION_TOOL}\"" not in p for p in model.prompts)
    assert "10.1.2.3" in "\n".join(_summaries(view))  # carried forward by the merge, never re-sent
    assert check_invariants(parse_chain(view)) == []


def test_every_summary_and_every_prompt_stays_within_its_bound_however_long_the_chain():
    chain = long_session(150)
    model = Recorder()
    view = summarize_chain_for_window(chain, AGENT, model, target=TARGET)
    decision = view.stats["window"]
    assert all(len(s.encode()) <= decision["summary_bytes_limit"] for s in _summaries(view.messages))
    assert all(len(p.encode()) <= decision["input_bytes_limit"] + FRAME for p in model.prompts)
    assert TARGET.input_limit_tokens == min(4_000, TARGET.trigger_tokens // INPUT_SHARE)


def test_bounded_folds_send_short_instructions_while_whole_spans_keep_pentagis_case_texts():
    chain = long_session(90)
    bounded, whole = Recorder(), Recorder()
    replay(chain, TARGET, bounded)
    replay(chain, WindowTarget(window_tokens=16_384, reserve_tokens=3_276), whole)
    assert bounded.prompts and whole.prompts
    assert all(p.startswith(f"<instructions>{INSTRUCTIONS_BOUNDED}</instructions>") for p in bounded.prompts)
    assert len(INSTRUCTIONS_BOUNDED) * 3 < len(INSTRUCTIONS_WITH_TASKS)
    pentagi = (f"<instructions>{INSTRUCTIONS_WITH_TASKS}</instructions>",
               f"<instructions>{INSTRUCTIONS_MESSAGES_ONLY}</instructions>")
    assert all(p.startswith(pentagi) for p in whole.prompts)


def test_a_pass_frees_the_margin_of_the_room_beside_what_no_fold_can_touch():
    task = human("scan the host " + "with care " * 1_500)  # a long request: the fixed part of every view
    chain = [system(), task] + [m for i in range(60) for m in pair(f"call_{i:04d}", 2_000)]
    model = Recorder()
    result = summarize_chain_for_window(chain, AGENT, model, target=TARGET)
    decision = result.stats["window"]
    assert decision["fixed_bytes"] > len(task["content"])
    assert decision["target_bytes"] > decision["fixed_bytes"]  # a target below the request could never be met
    after = count_tokens(result.messages)
    assert after <= TARGET.trigger_tokens
    grown = summarize_chain_for_window(result.messages + pair("call_9000", 1_500), AGENT, model, target=TARGET)
    assert grown.calls == 0  # the margin leaves room for the next turn


def test_a_view_whose_fixed_part_exceeds_the_trigger_makes_no_call():
    chain = [system(), human("do it " * 12_000)] + pair("call_0001", 3_000) + pair("call_0002", 3_000)
    model = Recorder()
    result = summarize_chain_for_window(chain, AGENT, model, target=TARGET)
    assert result.calls == 0 and model.prompts == []
    assert result.stats["window"]["unreachable"] is True and result.messages == chain


def test_merged_summaries_keep_both_sides_within_the_budget_and_a_lone_one_stays_as_written():
    old = "Findings:\n- password hunter2 for admin on 10.1.2.3\n"
    new = "Findings:\n- share \\\\10.9.9.9\\backup readable\n"
    merged = merge_summaries([old, new], 2_000)
    assert "10.1.2.3" in merged and "10.9.9.9" in merged and len(merged.encode()) <= 2_000
    assert merged.count("Findings:") == 1  # one section per title, never a summary nested in another
    assert merge_summaries([new], 2_000) == new
    assert len(merge_summaries([old * 40], 600).encode()) <= 600


def test_a_single_step_larger_than_the_bound_is_sent_as_its_digest_within_the_bound():
    huge = "\n".join(f"line {i}: host-{i}.corp.local open" for i in range(3_000))
    chain = [system(), human("scan"), ai(None, {"id": "call_big", "type": "function", "function": {
        "name": "terminal", "arguments": '{"cmd": "scan"}'}}), tool("call_big", huge)]
    chain += [m for i in range(8) for m in pair(f"call_{i:04d}", 2_000)]
    model = Recorder()
    result = summarize_chain_for_window(chain, AGENT, model, target=TARGET)
    assert result.error is None and model.prompts
    limit = result.stats["window"]["input_bytes_limit"]
    assert all(len(p.encode()) <= limit + FRAME for p in model.prompts)
    # the span's digest, not its raw output
    assert all(SUMMARY_PREFIX.strip() in p.rsplit("<messages>", 1)[-1] for p in model.prompts)


@settings(max_examples=40, deadline=None)
@given(chains(), st.integers(400, 4_000), st.sampled_from([0, 25, 50, 90]), st.sampled_from([50, 500, 4_000]))
def test_the_window_strategy_and_its_fit_are_deterministic_and_never_send_a_request_over_the_budget(
        chain, window, margin, input_tokens):
    target = WindowTarget(window_tokens=window, reserve_tokens=window // 5, margin_percent=margin,
                          input_tokens=input_tokens)
    runs = []
    for _ in range(2):
        model = Recorder()
        result = summarize_chain_for_window(chain, AGENT, model, target=target)
        assert result.error is None, result.error
        try:
            fit = fit_to_window(result.messages, window_tokens=window, reserve_tokens=window // 5, summarize=model,
                                restore=False)
        except ContextTooLarge as exc:
            view, refused = exc.partial.messages, True  # type: ignore[attr-defined]
        else:
            view, refused = fit.messages, False
            assert fit.tokens <= window - window // 5  # what is sent is within the budget
        runs.append((view, refused, model.prompts))
    assert runs[0] == runs[1]


def test_the_fit_refuses_a_hopeless_view_before_any_model_call():
    chain = [system("s " * 3_000), human("go"), ai("a final answer " * 4_000)]
    model = Recorder()
    with pytest.raises(ContextTooLarge):
        fit_to_window(chain, window_tokens=4_096, summarize=model)
    assert model.prompts == []


def test_without_restore_the_fit_goes_straight_to_the_window_cut():
    chain = [system(), human("scan the host")]
    for i in range(40):
        chain += rr(f"call_{i:04d}", f"step {i}: the scan found nothing new on this port. " * 40)
    fit = fit_to_window(chain, window_tokens=8_192, summarize=make_extractive(), restore=False)
    assert fit.steps == ["window_cut"] and fit.fits
    assert fit_to_window(chain, window_tokens=8_192, summarize=make_extractive()).steps[0] == "restore"


def test_a_request_longer_than_the_window_is_refused_without_summarizing_the_history_first():
    """A window cut quotes the newest request in its checkpoint, so a request alone over the budget cannot fit
    whatever is summarized: the fit says so at once instead of paying for a summary of the history."""
    chain = [system(), human("scan " * 9_000)] + [m for i in range(6) for m in pair(f"call_{i:04d}", 1_500)]
    model = Recorder()
    with pytest.raises(ContextTooLarge):
        fit_to_window(chain, window_tokens=8_192, summarize=model, restore=False)
    assert model.prompts == []
