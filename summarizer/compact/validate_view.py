"""The last check before a view is handed to a model (compaction.md §0.2).

A view is the list of messages a model receives. Whatever produced it (the chain summarizer, a window cut, a
truncation, pruning), it must be structurally sendable: known roles, a system message only in first place,
the first message a system or user message, and every tool call answered exactly once by the tool messages
that directly follow its assistant message (providers reject anything else). This module only decides; it
never repairs, so a bug upstream surfaces as an error instead of a silently different view.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["InvalidView", "assert_valid_view", "view_problems", "VIEW_ROLES"]

VIEW_ROLES = frozenset({"system", "user", "assistant", "tool"})


class InvalidView(ValueError):
    """A view breaks a structural rule; `index` is the offending message (or -1 for the view as a whole)."""

    def __init__(self, index: int, reason: str) -> None:
        super().__init__(f"invalid view at message {index}: {reason}" if index >= 0 else f"invalid view: {reason}")
        self.index = index
        self.reason = reason


def _call_ids(message: dict[str, Any]) -> list[str]:
    return [str(call.get("id", "")) for call in message.get("tool_calls") or [] if isinstance(call, dict)]


def _role_problem(index: int, message: Any) -> str | None:
    if not isinstance(message, dict):
        return "not a message object"
    role = message.get("role")
    if role not in VIEW_ROLES:
        return f"unknown role {role!r}"
    if role == "system" and index != 0:
        return "system message after the first position"
    if index == 0 and role not in ("system", "user"):
        return f"first message is {role!r}, expected system or user"
    if message.get("tool_calls") and role != "assistant":
        return f"tool_calls on a {role} message"
    return None


def view_problems(messages: Sequence[Any]) -> list[tuple[int, str]]:
    """Every structural problem of `messages` as (index, reason); empty when the view is sendable."""
    problems: list[tuple[int, str]] = []
    pending: dict[str, int] = {}  # call id -> index of its assistant, for calls not answered yet
    answered: set[str] = set()
    for index, message in enumerate(messages):
        problem = _role_problem(index, message)
        if problem:
            problems.append((index, problem))
            continue
        role = message["role"]
        if role == "tool":
            call_id = str(message.get("tool_call_id", ""))
            if call_id in pending:
                del pending[call_id]
                answered.add(call_id)
            elif call_id in answered:
                problems.append((index, f"second result for tool call {call_id!r}"))
            else:
                problems.append((index, f"tool result {call_id!r} has no call in the assistant message before it"))
            continue
        # Any non-tool message closes the previous assistant's result block.
        problems.extend((owner, f"tool call {cid!r} has no result") for cid, owner in pending.items())
        pending = {}
        if role == "assistant":
            for call_id in _call_ids(message):
                if call_id in pending or call_id in answered:
                    problems.append((index, f"duplicate tool call id {call_id!r}"))
                pending[call_id] = index
    problems.extend((owner, f"tool call {cid!r} has no result") for cid, owner in pending.items())
    return problems


def assert_valid_view(messages: Sequence[Any]) -> None:
    """Raise InvalidView for the first structural problem of `messages`; return None when it is sendable."""
    if not isinstance(messages, (list, tuple)):
        raise InvalidView(-1, "a view is a list of messages")
    problems = view_problems(messages)
    if problems:
        index, reason = problems[0]
        raise InvalidView(index, reason)
