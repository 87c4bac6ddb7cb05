"""fit_to_window and compact_now: the order of steps, the summary message, fail-closed behaviour (§3, §5)."""
from __future__ import annotations

import pytest

from summarizer.compact import fit as fit_module
from summarizer.compact.errors import CompactionFailed, ContextTooLarge
from summarizer.compact.fit import compact_now, effective_reserve, fit_to_window
from summarizer.compact.prompt import SUMMARY_INTRO, parse_summary_message
from summarizer.compact.providers import register_compaction_provider, unregister_compaction_provider
from summarizer.compact.summary_suffix import SUMMARY_TRUNCATED_MARKER
from summarizer.compact.validate_view import assert_valid_view
from summarizer.settings.config import SummarizerConfig
from summarizer.tokens.count import count_tokens
from tests.summarizer.compact_fakes import Checkpoint, chain, tool_turn, words

# A restore profile so generous that step a never changes anything: isolates steps b-d.
NO_RESTORE = SummarizerConfig(preserve_last=False, use_qa=False, keep_qa_sections=1000)


def test_a_view_that_fits_is_returned_unchanged_without_calls():
    view = chain(turns=2, rounds=1, result_words=50)
    fake = Checkpoint()
    result = fit_to_window(view, window_tokens=16_000, summarize=fake)
    assert result.messages == view and not result.compacted and fake.calls == 0
    assert result.tokens == result.tokens_before == count_tokens(view)
    assert result.lineage == [[i] for i in range(len(view))] and result.steps == []


def test_reserve_is_the_models_max_output_capped_at_a_fifth_of_the_window():
    assert effective_reserve(128_000, None, "gpt-4o") == 16_384
    assert effective_reserve(16_000, None, "gpt-4o") == 3_200
    assert effective_reserve(100_000, None, "unknown-model") == 20_000
    assert effective_reserve(100_000, 5_000) == 5_000


def test_step_a_restore_profile_runs_first_and_can_be_enough():
    view = chain(turns=6, rounds=4, result_words=600)
    fake = Checkpoint()
    result = fit_to_window(view, window_tokens=16_000, summarize=fake)
    assert result.steps == ["restore"] and result.compacted and result.calls == fake.calls >= 1
    assert result.tokens <= result.budget_tokens < result.tokens_before
    assert sorted({i for lin in result.lineage for i in lin}) == list(range(len(view)))
    assert_valid_view(result.messages)


def test_step_b_window_cut_puts_one_summary_message_after_the_system_message():
    view = chain(turns=6, rounds=4, result_words=600)
    fake = Checkpoint()
    result = fit_to_window(view, window_tokens=16_000, summarize=fake, config=NO_RESTORE)
    assert result.steps == ["window_cut"] and result.tokens <= result.budget_tokens
    out = result.messages
    assert out[0] == view[0]
    text, _ = parse_summary_message(out[1])
    assert text == result.summary and sum(1 for m in out if parse_summary_message(m)[0]) == 1
    assert "<summary>" in str(out[1]["content"]) and str(out[1]["content"]).count(SUMMARY_INTRO) <= 1
    assert out[-1] == view[-1] and result.covered and max(result.covered) < len(view) - 1
    assert set(result.covered) <= set(result.lineage[1])
    assert "10.0.0.5" in result.summary  # identifiers from the compacted span survive


def test_the_kept_tail_stays_verbatim_and_within_half_the_window():
    view = chain(turns=14, rounds=4, result_words=600)
    result = fit_to_window(view, window_tokens=32_000, summarize=Checkpoint(), config=NO_RESTORE,
                           keep_recent_tokens=50_000)
    assert result.steps == ["window_cut"]
    tail = [m for m in result.messages[2:]]
    assert tail == view[len(view) - len(tail):]
    assert count_tokens(tail) <= 16_000


def test_a_previous_summary_is_redistilled_into_one_rolling_summary():
    view = chain(turns=6, rounds=4, result_words=600)
    first = fit_to_window(view, window_tokens=16_000, summarize=Checkpoint(), config=NO_RESTORE)
    grown = first.messages + [m for t in range(4) for m in
                              [{"role": "user", "content": f"more {t}"}, *tool_turn(f"n{t}", 900, t),
                               {"role": "assistant", "content": "ok"}]]
    fake = Checkpoint()
    second = fit_to_window(grown, window_tokens=16_000, summarize=fake, config=NO_RESTORE, force=True)
    assert second.steps[0] == "window_cut"
    assert f"<previous_summary>\n{first.summary}\n</previous_summary>" in fake.prompts[0]
    assert sum(1 for m in second.messages if parse_summary_message(m)[0]) == 1
    assert 1 in second.covered


def test_an_explicit_previous_summary_does_not_discard_the_one_in_the_view():
    """§3.2 b: the previous compaction summary is re-distilled. When the caller also passes one (e.g. from an
    event record) and it differs, both reach the summarizer; the view's summary message is never dropped
    unread."""
    view = chain(turns=6, rounds=4, result_words=600)
    first = compact_now(view, summarize=Checkpoint(), keep_recent_tokens=2_000)
    grown = first.messages + [{"role": "user", "content": "next task"}, *tool_turn("n", 900),
                              {"role": "assistant", "content": "ok"}]
    fake = Checkpoint()
    compact_now(grown, summarize=fake, keep_recent_tokens=200, previous_summary="Older note: host 10.42.0.9")
    assert first.summary in fake.prompts[0] and "10.42.0.9" in fake.prompts[0]


def test_a_split_turn_gets_its_prefix_summarized_separately():
    view = [{"role": "system", "content": "sys"}, {"role": "user", "content": "Scan 10.9.9.9 fully and report."}]
    for r in range(20):
        view += tool_turn(f"c{r}", 900, r)
    fake = Checkpoint()
    result = fit_to_window(view, window_tokens=16_000, summarize=fake, config=NO_RESTORE)
    assert result.steps == ["window_cut"] and fake.calls == 1
    assert "Turn in progress" in result.summary
    assert "## Original request" in fake.prompts[-1]
    assert result.messages[2]["role"] == "assistant"  # the kept suffix starts mid-turn
    ask = parse_summary_message(result.messages[1])[1]  # the turn's ask stays verbatim, in the summary message
    assert ask["content"] == [{"type": "text", "text": "Scan 10.9.9.9 fully and report."}]
    assert 1 not in result.covered and 2 in result.covered
    assert_valid_view(result.messages)


def test_one_long_newest_turn_still_shrinks_and_keeps_its_ask():
    """The keep budget is reached only at the newest user message: the cut moves later so the view shrinks."""
    view = [{"role": "system", "content": "sys"}, {"role": "user", "content": "Big task: " + words(6_000)}]
    for r in range(4):
        view += tool_turn(f"c{r}", 1_500, r)
    view.append({"role": "assistant", "content": "Summary so far " + words(200)})
    result = fit_to_window(view, window_tokens=16_000, summarize=Checkpoint(), config=NO_RESTORE)
    assert result.steps == ["window_cut"] and result.fits
    assert parse_summary_message(result.messages[1])[1]["content"][0]["text"] == view[1]["content"]
    assert result.messages[-1] == view[-1]


def test_step_c_truncates_an_oversized_tool_result_in_the_kept_tail():
    view = [{"role": "system", "content": "sys"}, {"role": "user", "content": "dump it"},
            *tool_turn("big", 40_000)]
    result = fit_to_window(view, window_tokens=16_000, summarize=Checkpoint(), config=NO_RESTORE)
    assert result.steps == ["truncate"] and result.plan == "truncate_tool_results_only"
    assert "chars omitted ...]" in result.messages[-1]["content"] and result.tokens <= result.budget_tokens


def test_step_d_raises_with_the_sizes_when_the_irreducible_part_cannot_fit():
    view = [{"role": "system", "content": words(20_000)}, {"role": "user", "content": "hi"}]
    with pytest.raises(ContextTooLarge) as info:
        fit_to_window(view, window_tokens=16_000, summarize=Checkpoint(), config=NO_RESTORE)
    error = info.value
    assert error.window_tokens == 16_000 and error.irreducible_tokens > error.budget_tokens
    assert str(error.window_tokens) in str(error) and str(error.tokens) in str(error)
    assert_valid_view(error.partial.messages)


def test_a_summary_too_big_for_the_room_left_is_named_in_the_error():
    view = [{"role": "system", "content": "sys"}, {"role": "user", "content": "task " + words(7_000)}]
    view += [m for r in range(6) for m in tool_turn(f"c{r}", 900, r)]
    big = Checkpoint(text="\n".join(f"## {h}\n" + words(900) for h in
                                   ("Goal", "Constraints & preferences", "Progress", "Key decisions", "Next steps",
                                    "Critical context")))
    with pytest.raises(ContextTooLarge) as info:
        fit_to_window(view, window_tokens=16_000, summarize=big, config=NO_RESTORE, identifier_policy="off")
    error = info.value
    # a summarizer that ignores the stated budget is held to the 16,000-char cap (fact 41), still too big here
    assert error.irreducible_tokens < error.budget_tokens < error.tokens and error.summary_tokens > 2_000
    assert f"summary takes {error.summary_tokens}" in str(error)
    assert error.partial.summary.endswith(SUMMARY_TRUNCATED_MARKER)


def test_a_summary_that_keeps_failing_the_audit_keeps_the_old_view():
    view = chain(turns=6, rounds=4, result_words=600)
    good = Checkpoint()
    fit_to_window(view, window_tokens=16_000, summarize=good, config=NO_RESTORE)
    fake = Checkpoint(drop_identifiers=True)
    result = fit_to_window(view, window_tokens=16_000, summarize=fake, config=NO_RESTORE)
    assert result.messages == view and result.error.startswith("summary audit failed twice")
    assert good.calls < fake.calls < 2 * good.calls  # one retry of the final calls; chunk summaries reused
    retry = next(p for p in fake.prompts if "Your previous attempt dropped these identifiers" in p)
    assert "10.0.0.5" in retry.split("dropped these identifiers")[1]
    with pytest.raises(CompactionFailed):
        result.raise_for_error()


def test_a_summarizer_error_is_not_retried_and_keeps_the_view():
    """Fact 34: summarization fails with nothing oversized -> no duplicate second attempt."""
    view = chain(turns=6, rounds=4, result_words=600)
    fake = Checkpoint(fail=RuntimeError("provider down"))
    result = fit_to_window(view, window_tokens=16_000, summarize=fake, config=NO_RESTORE)
    assert fake.calls == 1 and result.messages == view and "provider down" in result.error


def test_a_registered_provider_is_used_and_falls_back_to_the_builtin_on_failure():
    view = chain(turns=6, rounds=4, result_words=600)
    plugin, builtin = Checkpoint(), Checkpoint()
    register_compaction_provider("test-plugin", plugin)
    try:
        fit_to_window(view, window_tokens=16_000, summarize=builtin, config=NO_RESTORE, provider="test-plugin")
        assert plugin.calls >= 1 and builtin.calls == 0
        register_compaction_provider("test-plugin", Checkpoint(fail=RuntimeError("plugin bug")))
        result = fit_to_window(view, window_tokens=16_000, summarize=builtin, config=NO_RESTORE,
                               provider="test-plugin")
        assert builtin.calls == plugin.calls and result.error is None
    finally:
        unregister_compaction_provider("test-plugin")


def test_manual_hard_checkpoint_keeps_only_system_and_summary():
    view = chain(turns=3, rounds=2, result_words=200)
    fake = Checkpoint()
    result = compact_now(view, summarize=fake, instructions="Focus on open ports")
    assert [m["role"] for m in result.messages] == ["system", "user"]
    assert result.covered == list(range(1, len(view)))
    assert "Additional focus:\nFocus on open ports" in fake.prompts[0]


def test_manual_compaction_with_keep_recent_keeps_the_tail():
    view = chain(turns=4, rounds=3, result_words=400)
    result = compact_now(view, summarize=Checkpoint(), keep_recent_tokens=2_000)
    assert result.messages[-1] == view[-1] and len(result.messages) > 2
    assert_valid_view(result.messages)


def test_manual_instructions_beat_the_configured_ones_and_are_capped():
    view = chain(turns=3, rounds=2, result_words=200)
    fake = Checkpoint()
    compact_now(view, summarize=fake, instructions="x" * 2_000, default_instructions="configured focus")
    assert "x" * 800 in fake.prompts[0] and "x" * 801 not in fake.prompts[0]
    assert "configured focus" not in fake.prompts[0]
    compact_now(view, summarize=fake, instructions="  ", default_instructions="configured focus")
    assert "Additional focus:\nconfigured focus" in fake.prompts[1]


def test_bad_input_is_refused_clearly():
    with pytest.raises(ValueError, match="window_tokens"):
        fit_to_window([], window_tokens=0, summarize=Checkpoint())
    with pytest.raises(ValueError, match="no call"):
        fit_to_window([{"role": "user", "content": "x"}, {"role": "tool", "tool_call_id": "z", "content": "r"}],
                      window_tokens=16_000, summarize=Checkpoint())


def test_a_window_cut_offers_its_checkpoint_more_than_half_the_room_beside_the_system_message(monkeypatch):
    # the kept tail is whole turns and usually far below its budget: the checkpoint may use the room it leaves
    # (window_cut.fitted_options caps it at the room the actual tail leaves, so the view still fits)
    offered = []
    real = fit_module.window_cut

    def recording(*args, **kwargs):
        offered.append(kwargs["opts"].summary_budget_tokens)
        return real(*args, **kwargs)

    monkeypatch.setattr(fit_module, "window_cut", recording)
    view = chain(turns=12, rounds=4, result_words=600)
    result = fit_to_window(view, window_tokens=8_192, summarize=Checkpoint(), config=NO_RESTORE)
    room = result.budget_tokens - count_tokens(view[:1])
    assert offered and offered[0] > room / 2
    assert result.steps == ["window_cut"] and result.tokens <= result.budget_tokens
