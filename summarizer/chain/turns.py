"""Where an agent turn ends: the points at which PentAGI's agent loop summarizes the chain.

PentAGI summarizes after every completed tool round (the assistant's calls all answered) and before the next
model call, and after a final answer (an assistant message without calls). Replays, benchmarks and tests cut
transcripts at exactly these points.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["split_turns"]

Message = dict[str, Any]


def split_turns(messages: Iterable[Message]) -> list[list[Message]]:
    """Cut a transcript into turns; a trailing incomplete turn (e.g. opening system/user messages) is kept."""
    turns: list[list[Message]] = []
    current: list[Message] = []
    pending: set[str] = set()
    for msg in messages:
        current.append(msg)
        if msg["role"] == "assistant":
            pending = {call["id"] for call in msg.get("tool_calls") or ()}
        elif msg["role"] == "tool":
            pending.discard(msg.get("tool_call_id"))
        if msg["role"] in ("assistant", "tool") and not pending:
            turns.append(current)
            current = []
    if current:
        turns.append(current)
    return turns
