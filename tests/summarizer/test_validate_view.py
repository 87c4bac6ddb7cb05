"""The structural check every view passes before it reaches a model (compaction.md §0.2)."""
from __future__ import annotations

import pytest

from summarizer.compact.validate_view import InvalidView, assert_valid_view, view_problems
from tests.fakes import tool_call

call = tool_call


GOOD = [
    {"role": "system", "content": "sys"}, {"role": "user", "content": "go"},
    {"role": "assistant", "content": None, "tool_calls": [call("a"), call("b")]},
    {"role": "tool", "tool_call_id": "a", "content": "1"}, {"role": "tool", "tool_call_id": "b", "content": "2"},
    {"role": "assistant", "content": "done"},
]


def test_a_well_formed_view_passes():
    assert_valid_view(GOOD)
    assert view_problems(GOOD) == []
    assert_valid_view([])


@pytest.mark.parametrize("view,index,fragment", [
    ([{"role": "assistant", "content": "x"}], 0, "first message"),
    ([{"role": "user", "content": "x"}, {"role": "system", "content": "s"}], 1, "system message after"),
    ([{"role": "user", "content": "x"}, {"role": "bot", "content": "s"}], 1, "unknown role"),
    ([{"role": "user", "content": "x"}, {"role": "tool", "tool_call_id": "z", "content": "r"}], 1, "no call"),
    (GOOD[:3] + GOOD[4:], 2, "'a' has no result"),
    (GOOD[:4] + [{"role": "user", "content": "between"}] + GOOD[4:], 2, "'b' has no result"),
    (GOOD[:5] + [GOOD[4]], 5, "second result"),
    (GOOD[:3], 2, "no result"),
])
def test_it_names_the_first_broken_rule(view, index, fragment):
    with pytest.raises(InvalidView) as info:
        assert_valid_view(view)
    assert info.value.index == index and fragment in info.value.reason


def test_a_result_displaced_after_a_user_message_is_refused():
    view = GOOD[:3] + [GOOD[3], {"role": "user", "content": "u"}, GOOD[4]]
    problems = view_problems(view)
    assert any("'b' has no result" in reason for _, reason in problems)
    assert any(i == 5 for i, _ in problems)


def test_it_refuses_something_that_is_not_a_list():
    with pytest.raises(InvalidView):
        assert_valid_view({"role": "user"})
