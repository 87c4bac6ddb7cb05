"""Prefix hashing and matching (pure): the chain a request continues is found by hash, not by scanning."""
from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from flows.gateway.prefixes import (
    HistoryMemo,
    best_match,
    extend_hash,
    normalised,
    prefix_hashes,
    root_index,
)

text = st.text(max_size=30)
message = st.one_of(
    st.builds(lambda c: {"role": "user", "content": c}, text),
    st.builds(lambda c: {"role": "assistant", "content": c}, text),
    st.builds(lambda c, i: {"role": "tool", "tool_call_id": i or "x", "content": c}, text, text),
)
histories = st.lists(message, min_size=1, max_size=12)


@given(histories, histories)
def test_a_prefix_has_the_same_hashes_as_the_start_of_the_longer_history(head: list[Any], tail: list[Any]) -> None:
    assert prefix_hashes(head + tail)[:len(head)] == prefix_hashes(head)


@given(histories)
def test_extending_a_hash_equals_hashing_the_longer_history(history: list[Any]) -> None:
    *head, last = history
    start = prefix_hashes(head)[-1] if head else ""
    assert extend_hash(start, last) == prefix_hashes(history)[-1]


def test_sdk_echoes_of_a_message_hash_like_the_stored_one() -> None:
    stored = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "run", "arguments": "{}"}}]}
    echoed = {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"arguments": "{}", "name": "run"}}]}
    assert normalised(stored) == normalised(echoed)


def test_a_changed_message_changes_every_later_hash() -> None:
    a = [{"role": "user", "content": "one"}, {"role": "assistant", "content": "two"}]
    b = [{"role": "user", "content": "ONE"}, {"role": "assistant", "content": "two"}]
    assert not set(prefix_hashes(a)) & set(prefix_hashes(b))


def test_it_picks_the_chain_continuing_the_longest_prefix_of_the_request() -> None:
    hashes = prefix_hashes([{"role": "user", "content": str(i)} for i in range(6)])
    candidates = [(1, hashes[1]), (2, hashes[4]), (3, "unrelated")]
    match = best_match(hashes, candidates)
    assert match is not None and (match.chain_id, match.known) == (2, 5)


def test_no_candidate_continuing_the_request_is_no_match() -> None:
    hashes = prefix_hashes([{"role": "user", "content": str(i)} for i in range(3)])
    assert best_match(hashes, [(1, "unrelated")]) is None


def test_the_root_ends_at_the_first_user_message() -> None:
    history = [{"role": "system", "content": "s"}, {"role": "user", "content": "task"},
               {"role": "assistant", "content": "a"}, {"role": "user", "content": "more"}]
    assert root_index(history) == 1
    assert root_index([{"role": "system", "content": "only"}]) == 0


def _stored(message: Any, index: int) -> dict[str, Any]:
    return {**message, "index": index}  # a pure function of (message, index), like wire.storable


@given(st.lists(st.tuples(st.sampled_from(["extend", "rewrite", "other"]), histories), min_size=1, max_size=8))
def test_the_history_memo_gives_exactly_converting_and_hashing_each_request_afresh(
        steps: list[tuple[str, list[Any]]]) -> None:
    memo, current = HistoryMemo(size=2), [{"role": "user", "content": "task"}]
    others: list[Any] = [{"role": "user", "content": "another agent"}]
    for kind, more in steps:
        if kind == "extend":  # the usual resend: the whole history (new dicts) plus what happened since
            current = [dict(m) for m in current] + more
            request = current
        elif kind == "rewrite":  # the agent summarized its own history: same root, different middle
            current = current[:1] + more
            request = current
        else:  # another agent's history between two calls (it takes the memo's other slot, or evicts)
            others = others + more
            request = others
        fresh = [_stored(m, i) for i, m in enumerate(request)]
        assert memo.derive(request, _stored) == (fresh, prefix_hashes(fresh))


def test_the_history_memo_forgets_the_least_recently_used_history() -> None:
    memo = HistoryMemo(size=2)
    for i in range(3):
        memo.derive([{"role": "user", "content": str(i)}], _stored)
    assert len(memo.items) == 2
