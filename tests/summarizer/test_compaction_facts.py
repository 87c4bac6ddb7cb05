"""Upstream acceptance facts (compaction-acceptance.md) mapped onto our API, one test per fact or group.

Facts tested in the topic modules (each test's docstring names its fact):
  3, 34 -> test_compaction_prompt.py; 10-17 -> test_overflow.py; 18-19, 23-32 -> test_compact_cutpoints.py;
  35-38 -> test_compaction_prompt.py; 39-42 -> test_summary_suffix.py; 43-45 -> test_audit.py;
  53-56, 58-60 -> test_prune.py.
Facts tested here: 1, 2, 3 (token side), 4-9, 20-22, 33, 34, 46-50, 61.

Skipped, with reasons:
  - 47 (heartbeat part): heartbeat tokens do not exist in our chains (the rest of 47 is tested).
  - 51: successor-transcript rotation of OpenClaw's JSONL session tree (parentSession header, labels,
    branches, model_change entries): JSONL tree, does not apply.
  - 52: duplicate-user dedup when a successor segment is written (§7): part of the Django segment service, not
    of the pure fit core.
  - 57: cache-ttl pruning clock (lastCacheTouchAt): we have no prompt-cache clock; pruning is off/on only.
  - 60 (OAuth part): Anthropic-OAuth cache-ttl/heartbeat defaults: heartbeats do not apply.
"""
from __future__ import annotations

import pytest

from summarizer.compact.errors import RetryableProviderError, SummarizeAborted
from summarizer.compact.fit import compact_now, fit_to_window
from summarizer.compact.plan import effective_reserve, last_usage_tokens, plan_fit, should_compact, usage_tokens
from summarizer.compact.prompt import parse_summary_message
from summarizer.compact.providers import register_compaction_provider, unregister_compaction_provider
from summarizer.compact.summary_writer import NO_PRIOR_HISTORY, has_real_content
from summarizer.compact.validate_view import assert_valid_view
from summarizer.recovery.fallback import retry_call, summarize_with_fallback
from summarizer.tokens.count import count_tokens, message_tokens
from tests.summarizer.compact_fakes import Checkpoint, chain, tool_turn, words
from tests.summarizer.test_compact import NO_RESTORE


def test_fact_1_threshold():
    """Fact 1: 95,000 of 100,000 with reserve 10,000 compacts; 89,000 does not; disabled never does."""
    assert should_compact(95_000, 100_000, 10_000) is True
    assert should_compact(89_000, 100_000, 10_000) is False
    assert should_compact(95_000, 100_000, 10_000, enabled=False) is False


def test_fact_2_context_tokens_from_usage_skipping_aborted_assistants():
    """Fact 2: total if present, else the sum of the parts; aborted assistants are skipped."""
    assert usage_tokens({"total_tokens": 1234, "prompt_tokens": 1}) == 1234
    assert usage_tokens({"input": 100, "output": 20, "cacheRead": 5, "cacheWrite": 3}) == 128
    msgs = [{"role": "assistant", "content": "a", "usage": {"total_tokens": 500}},
            {"role": "assistant", "content": "b", "usage": {"total_tokens": 900}, "stop_reason": "aborted"}]
    assert last_usage_tokens(msgs) == 500 and last_usage_tokens([]) is None


def test_fact_3_tool_result_details_do_not_count_toward_tokens():
    """Fact 3 (token side): a tool result's `details` does not change its token count."""
    plain = {"role": "tool", "tool_call_id": "c", "content": "ok"}
    assert message_tokens({**plain, "details": {"blob": "x" * 10_000}}) == message_tokens(plain)


def test_fact_4_long_history_over_a_tiny_budget_needs_compaction():
    """Fact 4: long history, long system prompt and prompt, budget 500, reserve 50 -> compact_only."""
    view = [{"role": "system", "content": words(400)}, *[{"role": r, "content": words(200, i)}
            for i, r in enumerate(["user", "assistant"] * 3)]]
    plan = plan_fit(view, window_tokens=500, reserve_tokens=50)
    assert plan.decision == "compact_only" and plan.tokens > plan.budget_tokens and plan.should_compact


def test_fact_5_short_history_fits():
    """Fact 5: short history, budget 10,000, reserve 1,000 -> fits."""
    plan = plan_fit([{"role": "user", "content": "hi"}], window_tokens=10_000, reserve_tokens=1_000)
    assert plan.decision == "fits" and not plan.should_compact


def test_facts_6_7_a_reserve_as_large_as_the_window_shrinks_to_half():
    """Facts 6-7: window 16,000 + reserve 20,000 -> reserve 8,000, budget 8,000 (fits);
    window 32,000 + reserve 20,000 -> reserve stays 20,000, budget 12,000."""
    assert effective_reserve(16_000, 20_000) == 8_000
    assert plan_fit([{"role": "user", "content": "hi"}], window_tokens=16_000,
                    reserve_tokens=20_000).budget_tokens == 8_000
    assert effective_reserve(32_000, 20_000) == 20_000
    assert plan_fit([{"role": "user", "content": "hi"}], window_tokens=32_000,
                    reserve_tokens=20_000).budget_tokens == 12_000


def test_fact_8_small_overflow_with_big_tool_tails_only_truncates():
    """Fact 8: small overflow, large reducible tool results -> truncate_tool_results_only, no compaction,
    and fit_to_window then makes no summary call."""
    view = [{"role": "system", "content": "sys"}, {"role": "user", "content": "dump"}, *tool_turn("x", 14_000)]
    plan = plan_fit(view, window_tokens=16_000)
    assert plan.decision == "truncate_tool_results_only" and not plan.should_compact
    fake = Checkpoint()
    result = fit_to_window(view, window_tokens=16_000, summarize=fake)
    assert result.steps == ["truncate"] and fake.calls == 0 and result.fits


def test_fact_9_huge_history_with_partly_helpful_tool_tails_compacts_then_truncates():
    """Fact 9: truncation helps only partly -> compact_then_truncate, should compact."""
    view = chain(turns=8, rounds=3, result_words=600) + tool_turn("big", 12_000)
    plan = plan_fit(view, window_tokens=16_000)
    assert plan.decision == "compact_then_truncate" and plan.should_compact
    assert plan.tokens_after_truncation < plan.tokens


def _u(text):
    return {"role": "user", "content": text}


def _a(text):
    return {"role": "assistant", "content": text}


def test_fact_20_context_after_a_compaction_is_summary_then_kept_then_new():
    """Fact 20: [u1,a1,u2,a2] compacted keeping u2 -> then u3,a3 appended: the context is the summary, u2, a2,
    u3, a3 in order. Ours: u2 rides in the summary message as its second part (one user message)."""
    u1, a1, u2, a2 = _u("first ask " + words(300)), _a("first answer " + words(300)), _u("second ask"), _a("ok")
    keep = message_tokens(u2) + message_tokens(a2)
    result = compact_now([u1, a1, u2, a2], summarize=Checkpoint(), keep_recent_tokens=keep)
    view = result.messages + [_u("third ask"), _a("done")]
    assert len(view) == 4 and parse_summary_message(view[0])[1]["content"][0]["text"] == "second ask"
    assert view[1:] == [a2, _u("third ask"), _a("done")]
    assert result.covered == [0, 1] and result.lineage[0] == [0, 1, 2]
    assert_valid_view(view)


def test_fact_21_only_the_latest_summary_is_used_after_two_compactions():
    """Fact 21: two compactions -> one summary message, the latest; the first was fed to it as history."""
    view = chain(turns=4, rounds=2, result_words=300)
    first = compact_now(view, summarize=Checkpoint(), keep_recent_tokens=800)
    grown = first.messages + [_u("another task on 10.7.7.7"), _a(words(400)), _u("and one more"), _a("fine")]
    fake = Checkpoint()
    second = compact_now(grown, summarize=fake, keep_recent_tokens=60)
    summaries = [m for m in second.messages if parse_summary_message(m)[0]]
    assert len(summaries) == 1 and parse_summary_message(summaries[0])[0] == second.summary
    assert first.summary in fake.prompts[0]
    assert second.messages[-1] == _a("fine")


def test_fact_22_a_cut_at_the_first_message_keeps_summary_plus_everything():
    """Fact 22: when the kept part starts at the first message after the summary, the view is the summary plus
    all messages, unchanged."""
    view = [{"role": "system", "content": "sys"}, *compact_now(chain(turns=2, rounds=1, result_words=100)[1:],
                                                               summarize=Checkpoint()).messages]
    view += [_a("continuing"), _u("next"), _a("ok")]
    result = compact_now(view, summarize=Checkpoint(), keep_recent_tokens=100_000)
    assert result.messages == view and not result.compacted


def test_fact_33_retry_policy():
    """Fact 33: 3 attempts, backoff 0.5 s then 1 s, no retry on abort."""
    sleeps, attempts = [], []

    def flaky():
        attempts.append(1)
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        retry_call(flaky, sleep=sleeps.append)
    assert len(attempts) == 3 and sleeps == [0.5, 1.0]
    results = iter([RuntimeError("x"), "ok"])

    def second_time():
        value = next(results)
        if isinstance(value, Exception):
            raise value
        return value

    assert retry_call(second_time, sleep=sleeps.append) == "ok"
    aborted = []
    with pytest.raises(SummarizeAborted):
        retry_call(lambda: aborted.append(1) or (_ for _ in ()).throw(SummarizeAborted("stop")), sleep=sleeps.append)
    assert aborted == [1]


def test_fact_34_a_failed_summary_is_not_attempted_twice():
    """Fact 34: summarization fails and nothing is oversized -> exactly one attempt, old view kept."""
    view = chain(turns=6, rounds=4, result_words=600)
    fake = Checkpoint(fail=RuntimeError("down"))
    assert fit_to_window(view, window_tokens=16_000, summarize=fake, config=NO_RESTORE).messages == view
    assert fake.calls == 1


def test_fact_46_nothing_real_to_summarize_still_writes_a_checkpoint_without_a_call():
    """Fact 46: empty preparation -> a compaction (not a cancel) saying "No prior history.", no model call;
    repeating it writes the checkpoint again."""
    view = [{"role": "system", "content": "sys"}, _u(" "),
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function",
                                                                    "function": {"name": "t", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c", "content": "ok"}]
    fake = Checkpoint()
    result = compact_now(view, summarize=fake)
    assert fake.calls == 0 and result.compacted and NO_PRIOR_HISTORY in result.summary
    assert "## Key decisions\nNo prior history." in result.summary
    again = compact_now(result.messages, summarize=fake)
    assert again.compacted and fake.calls == 0 and len(again.messages) == 2


def test_fact_47_what_counts_as_real_history():
    """Fact 47: tool-call-only and reasoning-only assistants are not real; a tool result is real only within
    20 messages of a user ask."""
    call = {"role": "assistant", "content": None, "reasoning": {"content": "thinking"},
            "tool_calls": [{"id": "c", "type": "function", "function": {"name": "t", "arguments": "{}"}}]}
    result = {"role": "tool", "tool_call_id": "c", "content": "output"}
    assert not has_real_content([call, result])
    assert not has_real_content([{"role": "assistant", "content": "", "reasoning": {"content": "hmm"}}])
    assert has_real_content([_u("do it"), call, result])
    assert not has_real_content([call, result], preceding=[_u("ask")] + [_a("")] * 25)
    assert has_real_content([call, result], preceding=[_u("ask")] + [_a("")] * 5)
    assert not has_real_content([call, result], preceding=[_u("  ")])


def test_fact_48_no_model_anywhere_cancels_the_compaction():
    """Fact 48: a provider answers when no summarize callable is given; with neither, the compaction is
    cancelled (error, view unchanged)."""
    view = chain(turns=3, rounds=2, result_words=200)
    cancelled = compact_now(view, summarize=None)
    assert cancelled.messages == view and "cancelled" in cancelled.error
    register_compaction_provider("fact48", Checkpoint())
    try:
        assert compact_now(view, summarize=None, provider="fact48").compacted
    finally:
        unregister_compaction_provider("fact48")


def test_fact_49_a_provider_gets_the_same_prompt_and_the_suffix_follows_its_output():
    """Fact 49: the provider sees the built-in prompt; the split-turn context is appended after its output."""
    view = [{"role": "system", "content": "sys"}, _u("old ask 10.1.1.1"), _a("old answer " + words(400)),
            _u("Scan 10.9.9.9 fully")]
    for r in range(6):
        view += tool_turn(f"c{r}", 400, r)
    keep = sum(message_tokens(m) for m in view[-4:])
    builtin, plugin = Checkpoint(), Checkpoint()
    compact_now(view, summarize=builtin, keep_recent_tokens=keep)
    register_compaction_provider("fact49", plugin)
    try:
        result = compact_now(view, summarize=Checkpoint(), keep_recent_tokens=keep, provider="fact49")
    finally:
        unregister_compaction_provider("fact49")
    assert plugin.prompts == builtin.prompts
    assert result.summary.index("## Goal") < result.summary.index("Turn in progress")


def test_fact_50_a_hard_checkpoint_is_exactly_the_summary_and_later_messages_follow_it():
    """Fact 50: after the second hard compaction the context is exactly [summary]; appending a user message
    gives [summary, user]."""
    view = [_u("task on 10.2.2.2"), _a(words(300))]
    first = compact_now(view, summarize=Checkpoint())
    second = compact_now(first.messages + [_a("more work " + words(100))], summarize=Checkpoint())
    assert len(second.messages) == 1 and parse_summary_message(second.messages[0])[0] == second.summary
    after = second.messages + [_u("next")]
    assert_valid_view(after) is None and after[-1] == _u("next")


def test_fact_61_fallback_models_only_when_the_model_is_not_explicit():
    """Fact 61: a 503 on the primary tries the next model in order; an explicit model (or an empty fallback
    list) does not fall back and the call fails."""
    def down(prompt):
        raise RetryableProviderError("503 Service Unavailable", status=503)

    used = []

    def backup(name):
        return lambda prompt: used.append(name) or f"summary by {name}"

    assert summarize_with_fallback("p", primary=down, fallbacks=[backup("b1"), backup("b2")]) == "summary by b1"
    assert used == ["b1"]
    with pytest.raises(RetryableProviderError):
        summarize_with_fallback("p", primary=down, fallbacks=[backup("b1")], explicit=True)
    with pytest.raises(RetryableProviderError):
        summarize_with_fallback("p", primary=down, fallbacks=[])
    with pytest.raises(ValueError):
        summarize_with_fallback("p", primary=lambda p: (_ for _ in ()).throw(ValueError("400")),
                                fallbacks=[backup("b1")])


def test_counting_the_fitted_view_uses_our_counter():
    view = chain(turns=6, rounds=4, result_words=600)
    result = fit_to_window(view, window_tokens=16_000, summarize=Checkpoint())
    assert result.tokens == count_tokens(result.messages)
