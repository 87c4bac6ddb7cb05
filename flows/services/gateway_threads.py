"""Threading requests into chains: normalised messages and rolling prefix hashes (pure, no database).

Agents resend their whole history on every call. `prefix_hashes(messages)[i]` identifies messages[0..i]; a
chain stores the hash of its raw history (`Chain.head_hash`), so the chain a request continues is the one
whose head hash is among the request's prefix hashes, found with one indexed query. Hashing the request is
linear in its size (it has to be parsed anyway); the database work does not grow with the history.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

__all__ = ["EMPTY_HASH", "normalised", "message_digest", "extend_hash", "prefix_hashes", "root_index",
           "Match", "best_match"]

EMPTY_HASH = ""


def _call(call: Any) -> Any:
    if not isinstance(call, dict):
        return call
    fn = call.get("function") or {}
    return [call.get("id"), fn.get("name"), fn.get("arguments")] if isinstance(fn, dict) else [call.get("id")]


def normalised(message: dict[str, Any]) -> list[Any]:
    """What identifies a message across resends: role, content (null and "" alike), calls, call id, name."""
    content = message.get("content")
    return [message.get("role"), "" if content is None else content,
            [_call(c) for c in message.get("tool_calls") or []], message.get("tool_call_id") or "",
            message.get("name") or ""]


def message_digest(message: dict[str, Any]) -> bytes:
    text = json.dumps(normalised(message), ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def extend_hash(previous: str, message: dict[str, Any]) -> str:
    return hashlib.blake2b(previous.encode() + message_digest(message), digest_size=16).hexdigest()


def prefix_hashes(messages: list[dict[str, Any]]) -> list[str]:
    out, current = [], EMPTY_HASH
    for message in messages:
        current = extend_hash(current, message)
        out.append(current)
    return out


def root_index(messages: list[dict[str, Any]]) -> int:
    """Index of the last message of the history's root: up to and including the first user message.

    An agent that summarizes its own history (PentAGI) keeps its system prompt and first task; a request with
    the same root as a chain it no longer extends is that chain, rewritten.
    """
    for i, message in enumerate(messages):
        if message.get("role") == "user":
            return i
    return 0


@dataclass(frozen=True)
class Match:
    chain_id: int
    known: int  # request messages already in the chain


def best_match(hashes: list[str], candidates: list[tuple[int, str, int]]) -> Match | None:
    """The longest chain whose raw history is a prefix of the request: candidates are (id, head_hash, seq)."""
    position = {EMPTY_HASH: 0, **{h: i + 1 for i, h in enumerate(hashes)}}
    best: Match | None = None
    for chain_id, head_hash, head_seq in candidates:
        known = position.get(head_hash)
        if known is not None and known == head_seq and (best is None or known > best.known):
            best = Match(chain_id=chain_id, known=known)
    return best
