"""The JSON body reader's checks give what a full walk of the parsed value gives, whatever the body holds.

`json_body` skips the walk of every string when a C-level search of the raw body rules lone surrogates out,
and counts nesting level by level: both must be exactly the checks they replace (same error, same field).
"""
from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flows.core import JsonBodyError, json_body, lone_surrogate_path
from flows.core.text_input import json_depth_over

# Strings a hostile body may carry: plain, non-ASCII (Hangul is ED 80-9F in UTF-8, a near miss of a surrogate),
# a lone surrogate, a surrogate pair as two code points (joined by json.loads when escaped, two lone ones when
# passed through UTF-8), an escaped backslash before `ud`.
_STRINGS = st.one_of(st.text(max_size=8), st.sampled_from(
    ["\ud800", "a\udfffb", "\ud83d\ude00", "한국어", "\\ud800", "\\uD83D", "[{", "]}", "\"", "\udc00x"]))
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | _STRINGS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_STRINGS, inner, max_size=4),
    max_leaves=25)


def _nesting(value: Any) -> int:
    """The reference: how deep containers nest (the root container is 1, a scalar 0)."""
    if isinstance(value, dict):
        return 1 + max(map(_nesting, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_nesting, value), default=0)
    return 0


def _raw(value: Any, ascii_only: bool, encoding: str) -> bytes | str:
    text = json.dumps(value, ensure_ascii=ascii_only)
    return text if encoding == "str" else text.encode(encoding, "surrogatepass")


@settings(max_examples=300, deadline=None)
@given(value=_JSON, limit=st.integers(min_value=0, max_value=6))
def test_depth_check_agrees_with_the_nesting_of_the_value(value: Any, limit: int) -> None:
    assert json_depth_over(value, limit) is (_nesting(value) > limit)


@settings(max_examples=400, deadline=None)
@given(value=st.dictionaries(_STRINGS, _JSON, max_size=4), ascii_only=st.booleans(),
       encoding=st.sampled_from(["utf-8", "str", "utf-16"]))
def test_a_body_is_refused_exactly_where_a_full_walk_finds_a_lone_surrogate(
        value: Any, ascii_only: bool, encoding: str) -> None:
    raw = _raw(value, ascii_only, encoding)
    parsed = json.loads(raw)
    where = lone_surrogate_path(parsed)
    if where is None:
        assert json_body(raw) == parsed
        return
    with pytest.raises(JsonBodyError) as refused:
        json_body(raw)
    assert (refused.value.code, refused.value.field) == ("invalid_text", where)


@pytest.mark.parametrize("raw", [b'{"a": "\\ud800"}', b'{"a": "\xed\xa0\x80"}', '{"a": "\ud800"}',
                                 '{"\\uDFFF": 1}', b'{"k": ["x", {"y": "\\udbff"}]}'])
def test_each_source_of_a_lone_surrogate_is_refused(raw: bytes | str) -> None:
    with pytest.raises(JsonBodyError) as refused:
        json_body(raw)
    assert refused.value.code == "invalid_text"


def test_a_body_nested_past_the_limit_is_refused_and_one_at_the_limit_is_not() -> None:
    assert json_body(b"[" * 100 + b"]" * 100) == json.loads(b"[" * 100 + b"]" * 100)
    with pytest.raises(JsonBodyError) as refused:
        json_body(b'{"a": ' + b"[" * 100 + b"]" * 100 + b"}")
    assert refused.value.code == "too_deep"
