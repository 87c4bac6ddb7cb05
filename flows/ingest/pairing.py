"""Tool-call pairing: what a batch may append after the chain's tail (PentAGI's force repair fixes the rest).

A tool result must answer a call of the assistant message before it, once; a chain starts with a system or
user message; a system message only comes first. The same rules serve an append (`chain_append`), a whole
transcript (`transcript_validate`) and the question whether a stored chain ends an agent turn.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Subquery

from flows.ingest.errors import AppendError
from flows.models import Chain

__all__ = ["turn_completed"]


@dataclass
class Tail:
    """What the chain's end looks like for pairing: empty or not, and the calls of the current pair."""

    empty: bool
    calls: dict[str, str]  # call id -> function name, of the most recent assistant message
    answered: set[str]
    open_pair: bool  # False once a user/system message followed that assistant message


def tail_after(empty: bool, last_calls: list[dict[str, Any]] | None, after: list[tuple[str, str]]) -> Tail:
    """The pairing state after the last assistant message (`last_calls`) and the messages since (`after`)."""
    calls = {c["id"]: (c.get("function") or {}).get("name", "") for c in last_calls or []
             if c.get("function") is not None}
    return Tail(empty=empty, calls=calls, answered={tid for role, tid in after if role == "tool"},
                 open_pair=all(role == "tool" for role, _ in after))


def tail_of(chain: Chain) -> Tail:
    """The stored chain's tail in one query: its newest assistant message and every message after it (none
    for an empty chain, whose `last_seq` says so)."""
    if chain.last_seq == 0:
        return Tail(empty=True, calls={}, answered=set(), open_pair=False)
    newest_ai = chain.messages.filter(role="assistant").order_by("-seq").values("seq")[:1]
    rows = list(chain.messages.filter(seq__gte=Subquery(newest_ai)).order_by("seq")
                .values_list("role", "tool_call_id", "tool_calls"))
    if not rows:  # no assistant message yet
        return Tail(empty=False, calls={}, answered=set(), open_pair=False)
    return tail_after(False, rows[0][2], [(role, call_id) for role, call_id, _ in rows[1:]])


def tail_needed(batch: list[dict[str, Any]]) -> bool:
    """Whether pairing `batch` depends on the stored tail beyond "is the chain empty": only a tool result before
    the batch's first assistant message answers a stored call. After an assistant message of the batch every
    rule, the sizes' call names and whether the batch ends a turn come from the batch itself (`check_pairing`
    resets the pair at each assistant message), so a whole agent turn appended at once reads no tail."""
    for msg in batch:
        if msg["role"] == "assistant":
            return False
        if msg["role"] == "tool":
            return True
    return False


def tail_for(chain: Chain, batch: list[dict[str, Any]]) -> Tail:
    """`tail_of(chain)` when `batch` needs it (`tail_needed`), else the tail without reading it: a query fewer."""
    if tail_needed(batch):
        return tail_of(chain)
    return Tail(empty=chain.last_seq == 0, calls={}, answered=set(), open_pair=False)


def tail_in(prior: list[dict[str, Any]]) -> Tail:
    """`tail_of` for a chain whose messages the caller holds (`prior`), without reading them again."""
    for i in range(len(prior) - 1, -1, -1):
        if prior[i]["role"] == "assistant":
            after = [(m["role"], m.get("tool_call_id") or "") for m in prior[i + 1:]]
            return tail_after(False, prior[i].get("tool_calls"), after)
    return Tail(empty=not prior, calls={}, answered=set(), open_pair=False)


def check_pairing(tail: Tail, batch: list[dict[str, Any]]) -> bool:
    """Reject what PentAGI's force-repair cannot fix; return whether the batch ends a turn."""
    for i, msg in enumerate(batch):
        role = msg["role"]
        if tail.empty and role not in ("system", "user"):
            raise AppendError("invalid_order", "a chain must start with a system or user message", index=i,
                              field="role")
        if role == "system" and not tail.empty:
            raise AppendError("invalid_order", "a system message is only allowed as the first message", index=i,
                              field="role")
        if role == "assistant":
            tail.calls = {c["id"]: c["function"]["name"] for c in msg.get("tool_calls") or []
                          if c.get("function") is not None}
            tail.answered, tail.open_pair = set(), True
        elif role == "tool":
            _check_tool_result(tail, msg, i)
        else:
            tail.open_pair = False  # a user message while calls are pending is fine: PentAGI answers them
        tail.empty = False
    last = batch[-1]
    if last["role"] == "assistant":
        return not tail.calls
    return last["role"] == "tool" and set(tail.calls) <= tail.answered


def _check_tool_result(tail: Tail, msg: dict[str, Any], i: int) -> None:
    call_id = msg["tool_call_id"]
    if not tail.open_pair or call_id not in tail.calls:
        raise AppendError("orphan_tool_result", f"tool result {call_id!r} answers no call of the assistant "
                          "message before it", index=i, field="tool_call_id")
    if call_id in tail.answered:
        raise AppendError("orphan_tool_result", f"tool call {call_id!r} is already answered", index=i,
                          field="tool_call_id")
    tail.answered.add(call_id)


def turn_completed(*, chain: Chain) -> bool:
    """Whether the stored chain ends an agent turn (answer without calls, or all calls of the round answered)."""
    last = chain.messages.order_by("-seq").first()
    if last is None or last.role not in ("assistant", "tool"):
        return False
    tail = tail_of(chain)
    return (not tail.calls) if last.role == "assistant" else set(tail.calls) <= tail.answered

