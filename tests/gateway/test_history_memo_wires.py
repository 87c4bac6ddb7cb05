"""The history memo on the grouped wires (OpenAI Responses items, Anthropic turns): exactly a full conversion.

A resend converts only what it adds, from the end of the previous request when the conversion resumes there;
whatever the requests (random items, appended ones, edits in the middle, errors), the messages and hashes are
those of converting the request whole, an edit is never reused past, and an error is the whole request's.
"""
from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from flows.gateway.prefixes import Conversion, HistoryMemo, prefix_hashes
from flows.gateway.protocols.anthropic import parse_messages_request, turns_conversion
from flows.gateway.responses_wire import conversation, items_conversion, parse_responses_request
from flows.gateway.wire import GatewayError

_CALLS = ["c1", "c2", "c3"]
_TEXT = st.sampled_from(["scan", "nmap -p 80", "done", ""])

_RESPONSES_ITEM = st.one_of(
    st.builds(lambda t: {"role": "user", "content": t}, _TEXT),
    st.builds(lambda t: {"type": "message", "role": "developer", "content": t}, _TEXT),
    st.builds(lambda t: {"type": "message", "role": "assistant", "id": "msg_1",
                         "content": [{"type": "output_text", "text": t, "annotations": []}]}, _TEXT),
    st.builds(lambda c: {"type": "function_call", "call_id": c, "name": "terminal", "arguments": "{}"},
              st.sampled_from(_CALLS)),
    st.builds(lambda c, t: {"type": "function_call_output", "call_id": c, "output": t}, st.sampled_from(_CALLS),
              _TEXT),
    st.builds(lambda t: {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": t}],
                         "encrypted_content": "sig"}, _TEXT),
    st.just({"type": "web_search_call", "id": "ws_1", "status": "completed"}),
)
_ANTHROPIC_TURN = st.one_of(
    st.builds(lambda t: {"role": "user", "content": t or "go"}, _TEXT),
    st.builds(lambda c, t: {"role": "user", "content": [{"type": "tool_result", "tool_use_id": c, "content": t}]},
              st.sampled_from(_CALLS), _TEXT),
    st.builds(lambda c, t: {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": c, "content": t}, {"type": "text", "text": "and"}]},
        st.sampled_from(_CALLS), _TEXT),
    st.builds(lambda t: {"role": "assistant", "content": t or "ok"}, _TEXT),
    st.builds(lambda c: {"role": "assistant", "content": [
        {"type": "text", "text": "running"}, {"type": "tool_use", "id": c, "name": "terminal", "input": {}}]},
        st.sampled_from(_CALLS)),
    st.builds(lambda t: {"role": "system", "content": t or "note"}, _TEXT),
)
# A request's next items: appended (the usual resend), an edit in the middle, the history cut short.
_STEPS = st.lists(st.tuples(st.sampled_from(["extend", "edit", "cut"]), st.integers(0, 30)), min_size=1, max_size=6)


class _Spy:
    """The conversion, telling from which item each conversion of a tail started."""

    def __init__(self, conversion: Conversion) -> None:
        self.conversion, self.starts = conversion, []

    def __call__(self) -> Conversion:
        def tail(items: list[Any], start: int, before: list[dict[str, Any]]) -> list[dict[str, Any]]:
            self.starts.append(start)
            return self.conversion.tail(items, start, before)

        self.starts.clear()
        return Conversion(tail, self.conversion.resumes)


def _next(kind: str, at: int, items: list[Any], more: list[Any]) -> list[Any]:
    """The next request's items: new objects, as a resend parses them."""
    if kind == "extend" or not items:
        new = items + more
    elif kind == "edit":
        at %= len(items)
        new = [*items[:at], *more[:1], *items[at + 1:]] if more else items[:at] + items[at + 1:]
    else:
        new = items[:at % len(items) + 1]
    return [json.loads(json.dumps(i)) for i in new]


def _known(remembered: list[list[Any]], items: list[Any]) -> int:
    """How many first items of `items` some request the memo took (one that converted without an error) had."""
    return max((next((i for i, (a, b) in enumerate(zip(r, items, strict=False)) if a != b),
                     min(len(r), len(items))) for r in remembered), default=0)


def _outcome(convert: Any) -> Any:
    try:
        return convert()
    except GatewayError as exc:
        return ("error", exc.status, exc.message)


def _check(memo: HistoryMemo, items: list[Any], spy: _Spy, whole: Any, scope: Any, remembered: list[list[Any]]
           ) -> list[list[Any]]:
    """One request through the memo against converting it whole; returns the requests the memo took."""
    expected = _outcome(lambda: (lambda m: (m, prefix_hashes(m)))(whole()))
    got = _outcome(lambda: memo.derive(items, spy(), scope=scope))
    assert got == expected
    known = _known(remembered, items)
    assert all(start <= known for start in spy.starts)  # nothing reused past an edit: only items it had
    return remembered if got[0] == "error" else [*remembered, items]


@settings(max_examples=150, deadline=None)
@given(first=st.lists(_RESPONSES_ITEM, min_size=1, max_size=8), steps=_STEPS,
       more=st.lists(st.lists(_RESPONSES_ITEM, max_size=5), min_size=6, max_size=6),
       instructions=st.sampled_from([None, "You are a pentester."]))
def test_responses_items_through_the_memo_are_exactly_a_full_conversion(
        first: list[Any], steps: list[tuple[str, int]], more: list[list[Any]], instructions: str | None) -> None:
    memo, items, remembered = HistoryMemo(), first, list[list[Any]]()
    for n, (kind, at) in enumerate([("extend", 0), *steps]):
        items = _next(kind, at, items, more[n - 1]) if n else items
        if not items:
            continue
        body = {"model": "m", "input": items, **({"instructions": instructions} if instructions else {})}
        request = parse_responses_request(json.dumps(body).encode())
        remembered = _check(memo, items, _Spy(items_conversion(request)), lambda r=request: conversation(r, []),
                            instructions, remembered)


@settings(max_examples=150, deadline=None)
@given(first=st.lists(_ANTHROPIC_TURN, min_size=1, max_size=8), steps=_STEPS,
       more=st.lists(st.lists(_ANTHROPIC_TURN, max_size=5), min_size=6, max_size=6),
       system=st.sampled_from([None, "You are a pentester.", [{"type": "text", "text": "Be brief."}]]))
def test_anthropic_turns_through_the_memo_are_exactly_a_full_conversion(
        first: list[Any], steps: list[tuple[str, int]], more: list[list[Any]], system: Any) -> None:
    memo, turns, remembered = HistoryMemo(), first, list[list[Any]]()
    for n, (kind, at) in enumerate([("extend", 0), *steps]):
        turns = _next(kind, at, turns, more[n - 1]) if n else turns
        if not turns:
            continue
        raw = json.dumps({"model": "m", "max_tokens": 8, "messages": turns,
                          **({"system": system} if system is not None else {})}).encode()
        remembered = _check(memo, turns, _Spy(turns_conversion(json.loads(raw))),
                            lambda r=raw: parse_messages_request(r)[1], system, remembered)


def test_a_resend_that_appends_converts_only_what_it_adds() -> None:
    memo = HistoryMemo()
    items = [{"role": "user", "content": "scan"},
             {"type": "function_call", "call_id": "c1", "name": "terminal", "arguments": "{}"},
             {"type": "function_call_output", "call_id": "c1", "output": "80 open"}]
    resend = [*items, {"type": "reasoning", "id": "rs", "summary": [], "encrypted_content": "sig"},
              {"type": "message", "role": "assistant", "content": "done"}, {"role": "user", "content": "next"}]
    for request_items, start in ((items, 0), (resend, len(items))):
        request = parse_responses_request(json.dumps({"model": "m", "input": request_items}).encode())
        spy = _Spy(items_conversion(request))
        assert memo.derive(request_items, spy())[0] == conversation(request, [])
        assert spy.starts == [start]


def test_an_anthropic_resend_converts_only_its_new_turns_in_the_context_of_the_old_ones() -> None:
    memo = HistoryMemo()
    turns = [{"role": "user", "content": "scan"}, {"role": "assistant", "content": [
        {"type": "tool_use", "id": "c1", "name": "terminal", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "80 open"}]}]
    resend = [*turns, {"role": "user", "content": "a turn of its own after the result"},
              {"role": "system", "content": "mid-conversation note"}]
    for request_turns, start in ((turns, 0), (resend, len(turns))):
        raw = json.dumps({"model": "m", "max_tokens": 8, "system": "S", "messages": request_turns}).encode()
        spy = _Spy(turns_conversion(json.loads(raw)))
        assert memo.derive(request_turns, spy(), scope="S")[0] == parse_messages_request(raw)[1]
        assert spy.starts == [start]
