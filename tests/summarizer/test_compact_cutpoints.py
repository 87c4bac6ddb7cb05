"""Cut points, chunking and history-share pruning (compaction.md §3.2 b, acceptance facts 18-32).

Sizes follow the facts' notation: chars/4 via an explicit measure, so the numbers match upstream's.
"""
from __future__ import annotations

from summarizer.compact.cutpoints import (
    drop_orphan_tool_results,
    find_cut_point,
    prune_history_for_context_share,
    split_messages_by_token_share,
)


def chars4(message):
    text = str(message.get("content") or "")
    text += "".join(c["function"]["name"] + c["function"]["arguments"] for c in message.get("tool_calls") or [])
    return -(-len(text) // 4)


def U(n, tag="u"):
    return {"role": "user", "content": ((tag + " ") * n)[:n]}


def A(text_chars=0, calls=(), **extra):
    return {"role": "assistant", "content": "a" * text_chars or None, **extra,
            "tool_calls": [{"id": c, "type": "function", "function": {"name": "t", "arguments": "{}"}} for c in calls]}


def R(cid, n=40):
    return {"role": "tool", "tool_call_id": cid, "content": "r" * n}


def sizes(messages):
    return [chars4(m) for m in messages]


def test_fact_18_everything_fits_or_no_valid_cut_point_cuts_at_start():
    """Fact 18: all messages within keep_recent -> first kept = start; no valid cut point -> start."""
    msgs = [U(40), A(40), U(40)]
    assert find_cut_point(msgs, keep_recent_tokens=10_000, tokens=sizes(msgs)).first_kept == 0
    tools_only = [R("x"), R("y")]
    assert find_cut_point(tools_only, keep_recent_tokens=1, start=0, tokens=sizes(tools_only)).first_kept == 0


def test_fact_19_a_cut_on_an_assistant_mid_turn_is_a_split_turn():
    """Fact 19: the cut lands on an assistant mid-turn -> split turn starting at that turn's user."""
    msgs = [U(400), A(400), U(400), A(400, ["a"]), R("a", 400), A(400, ["b"]), R("b", 400), A(400)]
    cut = find_cut_point(msgs, keep_recent_tokens=250, tokens=sizes(msgs))
    assert cut.first_kept == 5 and cut.is_split_turn and cut.turn_start == 2


def test_a_tool_result_is_never_a_cut_point_and_the_tail_never_exceeds_the_budget():
    msgs = [U(40), A(40, ["a"]), R("a", 4000), A(40)]
    cut = find_cut_point(msgs, keep_recent_tokens=500, tokens=sizes(msgs))
    assert msgs[cut.first_kept]["role"] in ("user", "assistant") and cut.first_kept == 3


def test_a_huge_newest_tool_round_falls_back_to_the_nearest_earlier_cut_point():
    msgs = [U(40), A(40), U(40), A(40, ["a"]), R("a", 40_000)]
    cut = find_cut_point(msgs, keep_recent_tokens=500, tokens=sizes(msgs))
    assert cut.first_kept == 3 and cut.is_split_turn and cut.turn_start == 2


def chunk_indices(messages, chunks):
    ids = {id(m): i + 1 for i, m in enumerate(messages)}
    return [[ids[id(m)] for m in chunk] for chunk in chunks]


def test_fact_23_a_call_and_its_result_share_a_chunk_and_nothing_is_lost():
    """Fact 23: [U4k, A+call(x)+4k text, R(x), U4k] -> call and result together, no message lost."""
    msgs = [U(4000), A(4000, ["x"]), R("x"), U(4000)]
    chunks = split_messages_by_token_share(msgs, 2, tokens=sizes(msgs))
    assert chunk_indices(msgs, chunks) == [[1], [2, 3, 4]]


def test_fact_24_all_results_of_a_multi_call_assistant_stay_with_it():
    """Fact 24: an assistant with calls a and b keeps R(a) and R(b) in its chunk."""
    msgs = [U(4000), A(200, ["a", "b"]), R("a", 4000), R("b", 4000), U(400)]
    chunks = chunk_indices(msgs, split_messages_by_token_share(msgs, 2, tokens=sizes(msgs)))
    assert any({2, 3, 4} <= set(c) for c in chunks)


def test_fact_25_a_displaced_result_still_lands_with_its_call():
    """Fact 25: [U4k, A+call(x), U800, R(x), U4k] -> call and result in the same chunk."""
    msgs = [U(4000), A(0, ["x"]), U(800), R("x"), U(4000)]
    chunks = chunk_indices(msgs, split_messages_by_token_share(msgs, 2, tokens=sizes(msgs)))
    assert any({2, 4} <= set(c) for c in chunks) and sum(len(c) for c in chunks) == 5


def test_fact_26_assistant_and_result_first_then_the_user():
    """Fact 26: [A+call(x)4k, R(x)4k, U4k] -> 2 chunks, the first holds the assistant and its result."""
    msgs = [A(4000, ["x"]), R("x", 4000), U(4000)]
    assert chunk_indices(msgs, split_messages_by_token_share(msgs, 2, tokens=sizes(msgs))) == [[1, 2], [3]]


def test_fact_27_small_call_with_big_result_goes_to_the_second_chunk():
    """Fact 27: [U4k, A+call(t)200, R(t)4k] -> chunks [1] and [2,3]."""
    msgs = [U(4000), A(200, ["t"]), R("t", 4000)]
    assert chunk_indices(msgs, split_messages_by_token_share(msgs, 2, tokens=sizes(msgs))) == [[1], [2, 3]]


def test_fact_28_an_aborted_call_does_not_block_the_split():
    """Fact 28: [A+call aborted 4k, U4k, U4k] -> 2 chunks."""
    msgs = [A(4000, ["gone"], stop_reason="aborted"), U(4000), U(4000)]
    assert len(split_messages_by_token_share(msgs, 2, tokens=sizes(msgs))) == 2


def test_fact_29_a_call_without_result_keeps_the_rest_together():
    """Fact 29: [U4k, A+call(missing), U4k] -> chunks [1] and [2,3]."""
    msgs = [U(4000), A(0, ["missing"]), U(4000)]
    assert chunk_indices(msgs, split_messages_by_token_share(msgs, 2, tokens=sizes(msgs))) == [[1], [2, 3]]


def test_fact_30_history_share_pruning_drops_the_oldest_and_keeps_the_newest():
    """Fact 30: 4 x U(4000), max 2,000 tokens, share 0.5 -> >= 1 chunk dropped, kept <= 1,000 tokens,
    dropped + kept = all, newest kept."""
    msgs = [U(4000, f"m{i}") for i in range(4)]
    pruned = prune_history_for_context_share(msgs, 2000, 0.5, measure=chars4)
    assert pruned.dropped_chunks >= 1 and pruned.kept_tokens <= 1000 and pruned.budget_tokens == 1000
    assert pruned.dropped_messages + pruned.messages == msgs
    assert pruned.messages[-1] is msgs[-1]


def test_fact_31_within_budget_nothing_is_dropped():
    """Fact 31: within budget -> nothing dropped, empty dropped list."""
    msgs = [U(40), A(40)]
    pruned = prune_history_for_context_share(msgs, 10_000, 0.5, measure=chars4)
    assert pruned.messages == msgs and pruned.dropped_messages == [] and pruned.dropped_chunks == 0


def test_fact_32_orphaned_results_of_a_dropped_call_are_removed_kept_calls_keep_theirs():
    """Fact 32: a dropped call's results leave the kept set; a kept call keeps its results."""
    dropped = [U(40), A(0, ["old"])]
    kept = [R("old"), U(40), A(0, ["new"]), R("new")]
    out, removed = drop_orphan_tool_results(kept, dropped)
    assert removed == 1 and out == kept[1:]
    msgs = [U(4000, "a"), A(0, ["x"]), R("x", 4000), U(4000, "b"), A(0, ["y"]), R("y", 400)]
    pruned = prune_history_for_context_share(msgs, 2600, 0.5, measure=chars4)
    kept_ids = {m.get("tool_call_id") for m in pruned.messages if m["role"] == "tool"}
    called = {c["id"] for m in pruned.messages for c in m.get("tool_calls") or []}
    assert kept_ids <= called and "y" in kept_ids
