"""Pruning old tool results per request (compaction.md §9, acceptance facts 53-60)."""
from __future__ import annotations

from summarizer.compact.prune import (
    CLEARED_PLACEHOLDER,
    IMAGE_PLACEHOLDER,
    PruneSettings,
    effective_prune_settings,
    prune_view,
    prune_view_report,
)

AGGRESSIVE = dict(mode="on", soft_trim_ratio=0.0, hard_clear_ratio=0.0, min_prunable_tool_chars=0)


def triple(n, tool="exec", size=100):
    cid = f"t{n}"
    return [{"role": "user", "content": f"ask {n}"},
            {"role": "assistant", "content": None,
             "tool_calls": [{"id": cid, "type": "function", "function": {"name": tool, "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": cid, "content": f"result {n} " + "r" * size}]


def results(view):
    return {m["tool_call_id"]: m["content"] for m in view if m["role"] == "tool"}


def test_fact_53_off_or_empty_settings_mean_no_pruning():
    """Fact 53: mode off and empty settings give no effective settings."""
    assert effective_prune_settings({"mode": "off"}) is None
    assert effective_prune_settings({}) is None
    assert effective_prune_settings(None) is None
    assert effective_prune_settings({"pruning_mode": "on"}).mode == "on"


def test_fact_60_pruning_is_off_by_default():
    """Fact 60 (defaults part): pruning is not enabled by default; the OAuth/heartbeat part does not apply."""
    assert PruneSettings().mode == "off"
    view = [{"role": "user", "content": "x"}] + triple(1, size=90_000)[1:]
    assert prune_view(view, window_tokens=1000, settings=PruneSettings()) == view


def test_fact_54_the_tool_results_of_the_last_three_assistants_stay():
    """Fact 54: keep_last_assistants=3 with 4 triples clears only t1."""
    view = [m for n in range(1, 5) for m in triple(n)]
    out = results(prune_view(view, window_tokens=1000, settings={**AGGRESSIVE, "keep_last_assistants": 3}))
    assert out["t1"] == CLEARED_PLACEHOLDER
    assert [out[f"t{n}"] for n in (2, 3, 4)] == [results(view)[f"t{n}"] for n in (2, 3, 4)]


def test_fact_55_results_before_the_first_user_message_are_never_pruned():
    """Fact 55: bootstrap tool results before the first user message stay, even with aggressive settings."""
    boot = triple(0)[1:]
    view = [{"role": "system", "content": "s"}, *boot, *[m for n in range(1, 4) for m in triple(n)]]
    out = results(prune_view(view, window_tokens=100, settings={**AGGRESSIVE, "keep_last_assistants": 0}))
    assert out["t0"] == boot[1]["content"]
    assert out["t1"] == out["t2"] == out["t3"] == CLEARED_PLACEHOLDER


def test_fact_56_keep_one_assistant_clears_both_older_results():
    """Fact 56: keep_last_assistants=1 with hard clear clears both results before the last assistant."""
    view = [m for n in range(1, 4) for m in triple(n)]
    out = results(prune_view(view, window_tokens=100, settings={**AGGRESSIVE, "keep_last_assistants": 1}))
    assert out["t1"] == out["t2"] == CLEARED_PLACEHOLDER
    assert out["t3"] == results(view)["t3"]


def test_fact_58_deny_wins_over_allow_and_unlisted_tools_stay():
    """Fact 58: allow ["ex*"], deny ["exec"] -> Exec is not pruned (deny wins), Browser is not (not allowed)."""
    view = [*triple(1, "Exec"), *triple(2, "Browser"), *triple(3, "Explore"), *triple(4, "exec")]
    settings = {**AGGRESSIVE, "keep_last_assistants": 0, "tools_allow": ["ex*"], "tools_deny": "exec"}
    out = results(prune_view(view, window_tokens=100, settings=settings))
    assert out["t1"] == results(view)["t1"] and out["t4"] == results(view)["t4"]
    assert out["t2"] == results(view)["t2"]
    assert out["t3"] == CLEARED_PLACEHOLDER


def test_fact_59_soft_trim_spans_text_blocks_and_replaces_images():
    """Fact 59: blocks ["AAAAA","BBBBB"], max 5, head 7, tail 3 -> "AAAAA\\nB" ... "BBB" plus the note."""
    settings = PruneSettings(mode="on", soft_trim_ratio=0.0, hard_clear_enabled=False, keep_last_assistants=0,
                             soft_trim_max_chars=5, soft_trim_head_chars=7, soft_trim_tail_chars=3)
    view = triple(1)
    view[2] = {**view[2], "content": [{"type": "text", "text": "AAAAA"}, {"type": "text", "text": "BBBBB"}]}
    report = prune_view_report(view, window_tokens=100, settings=settings)
    text = report.messages[2]["content"]
    assert text.startswith("AAAAA\nB\n...\nBBB\n\n")
    assert text.endswith("[Tool result trimmed: kept first 7 chars and last 3 chars of 11 chars.]")
    assert report.trimmed == [2]
    image_only = triple(2)
    image_only[2] = {**image_only[2], "content": [{"type": "image_url", "image_url": {"url": "x"}}] * 3}
    trimmed = prune_view(image_only, window_tokens=100, settings=settings)[2]["content"]
    assert IMAGE_PLACEHOLDER[:7] in trimmed


def test_openclaw_defaults_soft_trim_above_30_percent_only():
    """Defaults: results over 4,000 chars become first 1,500 + ... + last 1,500 + note above 30% of the window."""
    view = [m for n in range(1, 6) for m in triple(n, size=6_000)]
    on = PruneSettings(mode="on")
    big_window = prune_view(view, window_tokens=100_000, settings=on)  # ~30k chars of 400k: under 30%
    assert big_window == view
    small = prune_view_report(view, window_tokens=20_000, settings=on)  # ~30k chars of 80k: over 30%, under 50%
    assert small.trimmed == [2, 5] and small.cleared == []
    text = small.messages[2]["content"]
    assert text.startswith("result 1 ") and "\n...\n" in text
    assert text.endswith("[Tool result trimmed: kept first 1500 chars and last 1500 chars of 6009 chars.]")


def test_hard_clear_needs_50k_prunable_chars_and_stops_under_half_the_window():
    view = [m for n in range(1, 10) for m in triple(n, size=20_000)]
    report = prune_view_report(view, window_tokens=40_000, settings={"mode": "on", "soft_trim_max_chars": 10**9})
    assert report.cleared and report.cleared == sorted(report.cleared)
    chars = sum(len(str(m.get("content") or "")) for m in report.messages)
    assert chars <= 0.5 * 40_000 * 4
    small = [m for n in range(1, 10) for m in triple(n, size=4_000)]
    assert prune_view_report(small, window_tokens=5_000,
                             settings={"mode": "on", "soft_trim_max_chars": 10**9}).cleared == []


def test_pruning_never_mutates_the_input():
    view = [m for n in range(1, 5) for m in triple(n)]
    before = [dict(m) for m in view]
    prune_view(view, window_tokens=10, settings=AGGRESSIVE)
    assert view == before


def test_settings_come_from_a_settings_row():
    class Row:
        pruning_mode = "on"
        prune_keep_last_assistants = 2
        prune_tools_allow = "Ex*, browser"
        prune_tools_deny = ""

    settings = PruneSettings.from_any(Row())
    assert (settings.mode, settings.keep_last_assistants, settings.tools_allow) == ("on", 2, ("ex*", "browser"))
