"""Agent loops: the same tool call again and again is flagged once per episode, counted, and sent live."""
from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flows.config import settings_for
from flows.gateway.loops import ToolCall, agent_loop_check, find_loop, tool_calls_of
from flows.gateway.threads import gateway_answer_append, gateway_thread
from flows.models import AgentLoop


def _calls(*names: str) -> list[ToolCall]:
    return [ToolCall(seq, name, "{}") for seq, name in enumerate(names, start=1)]


def test_the_same_call_three_times_in_a_row_is_a_loop() -> None:
    finding = find_loop(_calls("ls", "cat", "cat", "cat"), repeats=3, window=0)
    assert finding is not None and finding.in_a_row and finding.repeats == 3 and finding.first_seq == 2


def test_a_call_coming_back_within_the_window_is_a_loop_too() -> None:
    finding = find_loop(_calls("cat", "ls", "cat", "ps", "cat"), repeats=3, window=5)
    assert finding is not None and not finding.in_a_row and finding.repeats == 3 and finding.first_seq == 1
    assert find_loop(_calls("cat", "ls", "cat", "ps", "cat"), repeats=3, window=4) is None


def test_only_the_newest_call_is_judged_and_off_means_off() -> None:
    assert find_loop(_calls("cat", "cat", "cat", "ls"), repeats=3, window=0) is None
    assert find_loop(_calls("cat", "cat", "cat"), repeats=0, window=10) is None
    assert find_loop([], repeats=3, window=10) is None


def test_arguments_are_compared_as_json_not_as_text() -> None:
    a = tool_calls_of(1, [{"function": {"name": "run", "arguments": '{"cmd": "ls", "cwd": "/"}'}}])
    b = tool_calls_of(2, [{"function": {"name": "run", "arguments": '{"cwd":"/","cmd":"ls"}'}}])
    c = tool_calls_of(3, [{"function": {"name": "run", "arguments": '{"cwd":"/tmp","cmd":"ls"}'}}])
    assert a[0].signature == b[0].signature != c[0].signature
    assert tool_calls_of(4, [{"function": {"arguments": "{}"}}, "junk", {"function": {"name": "x"}}]) == [
        ToolCall(4, "x", "")]


@given(st.lists(st.sampled_from(["a", "b", "c"]), max_size=30), st.integers(0, 6), st.integers(0, 12))
def test_a_finding_always_names_the_newest_call_repeated_at_least_the_threshold(
        names: list[str], repeats: int, window: int) -> None:
    calls = _calls(*names)
    finding = find_loop(calls, repeats=repeats, window=window)
    if finding is not None:
        assert finding.call == calls[-1] and finding.repeats >= repeats >= 2
        assert finding.in_a_row or finding.repeats <= window


# --- against the database -----------------------------------------------------------------------------------

SYSTEM = [{"role": "system", "content": "# SENIOR PENETRATION TESTING EXPERT\n\nwork"},
          {"role": "user", "content": "list the web root"}]


def _tool_round(i: int, cmd: str) -> list[dict[str, Any]]:
    return [{"role": "assistant", "content": None, "tool_calls": [{"id": f"c{i}", "type": "function", "function": {
        "name": "run_command", "arguments": json.dumps({"cmd": cmd})}}]},
        {"role": "tool", "tool_call_id": f"c{i}", "content": "index.html"}]


def _answer(user: Any, history: list[dict[str, Any]], i: int, cmd: str) -> tuple[list[dict[str, Any]],
                                                                                 AgentLoop | None]:
    """The gateway's turn: thread the request, append the model's tool-call answer, check for a loop."""
    threaded = gateway_thread(user=user, messages=history)
    answer = _tool_round(i, cmd)[0]
    seq = gateway_answer_append(chain_id=threaded.chain.pk, expected_head=threaded.head_hash, message=answer,
                                history=history)
    assert seq is not None
    return [*history, *_tool_round(i, cmd)], agent_loop_check(chain=threaded.chain, seq=seq)


@pytest.fixture
def user(django_user_model: Any) -> Any:
    return django_user_model.objects.create_user("loop-user", password="x")


@pytest.mark.django_db
def test_an_agent_repeating_a_call_gets_one_loop_row_whose_count_grows(user: Any) -> None:
    history, found = list(SYSTEM), []
    for i, cmd in enumerate(["ls /var/www", "ls /var/www", "ls /var/www", "ls /var/www", "id"]):
        history, loop = _answer(user, history, i, cmd)
        found.append(loop.repeats if loop else None)
    assert found == [None, None, 3, 4, None]
    loop = AgentLoop.objects.get()
    assert (loop.tool_name, json.loads(loop.arguments), loop.repeats, loop.in_a_row) == (
        "run_command", {"cmd": "ls /var/www"}, 4, True)


@pytest.mark.django_db
def test_the_loop_settings_decide_and_zero_turns_detection_off(user: Any) -> None:
    history: list[dict[str, Any]] = list(SYSTEM)
    loop: AgentLoop | None = None
    history, _ = _answer(user, history, 0, "id")
    chain = gateway_thread(user=user, messages=history).chain
    row = settings_for(profile="agent", flow=chain.agent.flow_id)
    row.loop_repeats = 0
    row.save()
    for i in range(1, 5):
        history, loop = _answer(user, history, i, "id")
    assert loop is None and not AgentLoop.objects.exists()
    row.loop_repeats, row.loop_window = 2, 0
    row.save()
    history, loop = _answer(user, history, 9, "id")
    assert loop is not None and loop.repeats == 6 and loop.in_a_row
