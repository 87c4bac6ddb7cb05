"""Issue 26 item 7: manage mode keeps the message fields the chain has no column for (`cache_control`, vendor
keys such as `reasoning_content`): in the stored chain, in what goes upstream for messages sent unchanged, and
in the export. Pure protocol tests here; the live round trip is in test_unknown_fields_live.py."""
from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from flows.gateway.prefixes import prefix_hashes
from flows.gateway.protocols import CHAT
from flows.gateway.wire import storable

CACHED = {"type": "ephemeral"}


def _request(messages: list[dict[str, Any]]) -> Any:
    return CHAT.parse(json.dumps({"model": "gpt-4o", "messages": messages}).encode(), {}, "")


def _sent(request: Any, view: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return json.loads(CHAT.upstream_body(request, "gpt-4o", view, manage=True))["messages"]


def test_unknown_fields_are_stored_and_sdk_nulls_are_not() -> None:
    message = {"role": "assistant", "content": "x", "reasoning_content": "thought", "cache_control": CACHED,
               "refusal": None, "x_vendor": {"k": [1]}}
    assert storable(message, 1) == {"role": "assistant", "content": "x", "reasoning_content": "thought",
                                    "cache_control": CACHED, "x_vendor": {"k": [1]}}


def test_unknown_fields_never_change_the_threading_hashes() -> None:
    plain = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    marked = [{**plain[0], "cache_control": CACHED}, {**plain[1], "reasoning_content": "r"}]
    assert prefix_hashes([storable(m, i) for i, m in enumerate(marked)]) == \
        prefix_hashes([storable(m, i) for i, m in enumerate(plain)])


def test_a_view_message_sent_unchanged_goes_upstream_with_the_agents_fields_as_sent_this_time() -> None:
    agent = [{"role": "system", "content": "rules", "cache_control": CACHED},
             {"role": "user", "content": "scan", "name": "op"},
             {"role": "assistant", "content": "done", "reasoning_content": "because"}]
    request = _request(agent)
    stored = [{**m, "stale_vendor_key": 1} for m in request.messages]  # what the chain kept from earlier calls
    assert _sent(request, stored) == agent


def test_a_message_the_engine_changed_or_made_goes_without_unknown_fields() -> None:
    request = _request([{"role": "user", "content": "long output", "cache_control": CACHED}])
    view = [{"role": "user", "content": "<summary>s</summary>", "cache_control": CACHED},
            {"role": "user", "content": "long out[...]", "cache_control": CACHED}]
    assert _sent(request, view) == [{"role": "user", "content": "<summary>s</summary>"},
                                    {"role": "user", "content": "long out[...]"}]


def test_our_own_fields_never_go_upstream() -> None:
    request = _request([{"role": "user", "content": "a"}, {"role": "developer", "content": "now JSON", "v": 1}])
    assert _sent(request, request.messages) == [{"role": "user", "content": "a"},
                                                {"role": "user", "content": "now JSON", "v": 1}]


def test_identical_messages_take_their_fields_from_the_end_of_the_history() -> None:
    agent = [{"role": "user", "content": "continue"}, {"role": "assistant", "content": "ok"},
             {"role": "user", "content": "continue", "cache_control": CACHED}]
    request = _request(agent)
    tail = [{"role": "user", "content": "<summary>s</summary>"}, request.messages[2]]
    assert _sent(request, tail) == [tail[0], agent[2]]


@given(st.lists(st.tuples(st.sampled_from(["user", "assistant"]), st.sampled_from(["a", "b", "c"]),
                          st.one_of(st.none(), st.integers(0, 3))), min_size=1, max_size=8))
def test_sending_the_whole_history_unchanged_sends_exactly_what_the_agent_sent(
        turns: list[tuple[str, str, int | None]]) -> None:
    agent = [{"role": role, "content": text, **({} if mark is None else {"x_mark": mark})}
             for role, text, mark in turns]
    request = _request(agent)
    assert _sent(request, request.messages) == agent
