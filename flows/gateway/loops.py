"""Agent loops: the same tool call (name and arguments) again and again, flagged as it happens.

The gateway sees every answer the model gives an agent, so after each answer with tool calls it looks at the
chain's newest calls: a call repeated `loop_repeats` times in a row, or `loop_repeats` times within the last
`loop_window` calls, is a loop. One `AgentLoop` row per episode: while the same call keeps coming back the
row's count grows (and `agent.loop` is sent again) instead of new rows piling up.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from flows.config import settings_for
from flows.core import AgentLoopEvent, broadcast
from flows.models import AgentLoop, Chain, Message

__all__ = ["ToolCall", "LoopFinding", "tool_calls_of", "find_loop", "agent_loop_check"]

ARGUMENT_CHARS = 2000  # what a loop row keeps of the repeated arguments
RUN_LOOKBACK_CALLS = 50  # how far back a run of one call is counted (the window may be shorter)


@dataclass(frozen=True)
class ToolCall:
    seq: int  # the raw seq of the assistant message that made it
    name: str
    arguments: str  # canonical: JSON with sorted keys when it parses, else the text as sent

    @property
    def signature(self) -> tuple[str, str]:
        return self.name, self.arguments


@dataclass(frozen=True)
class LoopFinding:
    call: ToolCall
    repeats: int  # how often the call came within the window (in a row: the run's length)
    in_a_row: bool
    first_seq: int  # the seq of its first repetition counted


def _canonical(arguments: Any) -> str:
    if not isinstance(arguments, str):
        return json.dumps(arguments, sort_keys=True, default=str)
    try:
        return json.dumps(json.loads(arguments), sort_keys=True)
    except ValueError:
        return arguments.strip()


def tool_calls_of(seq: int, tool_calls: Any) -> list[ToolCall]:
    """The calls an assistant message makes, in order (malformed entries skipped)."""
    calls = []
    for call in tool_calls if isinstance(tool_calls, list) else []:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            calls.append(ToolCall(seq, function["name"], _canonical(function.get("arguments", ""))))
    return calls


def find_loop(calls: list[ToolCall], *, repeats: int, window: int) -> LoopFinding | None:
    """Whether the newest of `calls` (oldest first) repeats: `repeats` times in a row, else `repeats` times
    within the last `window` calls. `repeats` below 2 turns the check off."""
    if repeats < 2 or not calls:
        return None
    newest = calls[-1]
    run = 0
    for call in reversed(calls):
        if call.signature != newest.signature:
            break
        run += 1
    if run >= repeats:
        return LoopFinding(newest, run, True, calls[-run].seq)
    recent = [c for c in calls[-window:] if c.signature == newest.signature] if window else []
    if len(recent) >= repeats:
        return LoopFinding(newest, len(recent), False, recent[0].seq)
    return None


def _recent_calls(chain_id: int, up_to_seq: int, wanted: int) -> list[ToolCall]:
    """The chain's last `wanted` tool calls up to `up_to_seq`, oldest first (one query)."""
    rows = (Message.objects.filter(chain_id=chain_id, role="assistant", tool_calls__isnull=False, seq__lte=up_to_seq)
            .order_by("-seq").values_list("seq", "tool_calls")[:wanted])
    calls = [call for seq, tool_calls in reversed(list(rows)) for call in tool_calls_of(seq, tool_calls)]
    return calls[-wanted:]


def agent_loop_check(*, chain: Chain, seq: int, call_id: int | None = None) -> AgentLoop | None:
    """After the answer at `seq` (with tool calls) joined `chain`: record or extend a loop it makes."""
    agent = chain.agent
    row = settings_for(profile=agent.profile, flow=agent.flow_id)
    repeats, window = row.loop_repeats, row.loop_window
    if repeats < 2:
        return None
    calls = _recent_calls(chain.pk, seq, max(repeats, window, RUN_LOOKBACK_CALLS))
    finding = find_loop(calls, repeats=repeats, window=window)
    if finding is None:
        return None
    loop = _record(chain.pk, finding, window, call_id)
    event: AgentLoopEvent = {"type": "agent.loop", "chain_id": chain.pk, "loop_id": loop.pk,
                             "tool_name": loop.tool_name[:200], "repeats": loop.repeats, "in_a_row": loop.in_a_row,
                             "window": loop.window}
    transaction.on_commit(lambda: broadcast(chain.pk, event), robust=True)
    return loop


def _record(chain_id: int, finding: LoopFinding, window: int, call_id: int | None) -> AgentLoop:
    """The episode's row: the chain's newest loop of the same call when it is still going on (its last
    repetition is within this finding), else a new one."""
    call = finding.call
    arguments = call.arguments[:ARGUMENT_CHARS]
    going_on = (AgentLoop.objects.filter(chain_id=chain_id, tool_name=call.name[:200], arguments=arguments,
                                         last_seq__gte=finding.first_seq).order_by("-pk").first())
    if going_on is not None:
        going_on.repeats, going_on.in_a_row = max(going_on.repeats, finding.repeats), finding.in_a_row
        going_on.last_seq, going_on.call_id = call.seq, call_id or going_on.call_id
        going_on.save(update_fields=["repeats", "in_a_row", "last_seq", "call", "updated_at"])
        return going_on
    return AgentLoop.objects.create(chain_id=chain_id, call_id=call_id, tool_name=call.name[:200],
                                    arguments=arguments, repeats=finding.repeats, in_a_row=finding.in_a_row,
                                    window=window, first_seq=finding.first_seq, last_seq=call.seq)
