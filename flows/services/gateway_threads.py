"""Threading requests into chains: normalised messages and rolling prefix hashes (pure, no database).

Agents resend their whole history on every call. `prefix_hashes(messages)[i]` identifies messages[0..i]; a
chain stores the hash of its raw history (`Chain.head_hash`), so the chain a request continues is the one
whose head hash is among the request's prefix hashes, found with one indexed query. The database work does
not grow with the history, and neither does the hashing in the common case: `PrefixMemo` remembers the last
request of each history (by its root) with its hashes, so a resend only compares the known messages (C-level
dict equality, ~50x cheaper than hashing them) and hashes the new ones.
"""
from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

__all__ = ["EMPTY_HASH", "normalised", "message_digest", "extend_hash", "prefix_hashes", "root_index",
           "Match", "best_match", "PrefixMemo", "request_hashes"]

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


def prefix_hashes(messages: list[dict[str, Any]], known: list[str] | None = None) -> list[str]:
    """Rolling hashes of every prefix; `known` holds those of a prefix already hashed (reused, not redone)."""
    out = list(known or [])
    current = out[-1] if out else EMPTY_HASH
    for message in messages[len(out):]:
        current = extend_hash(current, message)
        out.append(current)
    return out


def _common_prefix(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> int:
    n = min(len(a), len(b))
    if a[:n] == b[:n]:  # the usual resend: one C-level comparison of the whole known history
        return n
    i = 0
    while a[i] == b[i]:
        i += 1
    return i


class PrefixMemo:
    """Per process: the newest request seen for each history root, with its prefix hashes (bounded LRU).

    Only ever a shortcut: hashes are reused for the messages that are equal (same dicts) to the remembered
    ones, so the result is exactly `prefix_hashes(messages)`.
    """

    def __init__(self, size: int = 64) -> None:
        self.size, self.lock = size, threading.Lock()
        self.items: OrderedDict[str, tuple[list[dict[str, Any]], list[str]]] = OrderedDict()

    def hashes(self, messages: list[dict[str, Any]]) -> list[str]:
        root = messages[:root_index(messages) + 1]
        key = prefix_hashes(root)[-1] if root else EMPTY_HASH
        with self.lock:
            seen = self.items.get(key)
        known = seen[1][:_common_prefix(seen[0], messages)] if seen is not None else None
        out = prefix_hashes(messages, known)
        with self.lock:
            self.items[key] = (messages, out)
            self.items.move_to_end(key)
            while len(self.items) > self.size:
                self.items.popitem(last=False)
        return out


_MEMO = PrefixMemo()


def request_hashes(messages: list[dict[str, Any]]) -> list[str]:
    """`prefix_hashes(messages)`, reusing this process's hashes of the same history's previous request."""
    return _MEMO.hashes(messages)


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


def best_match(hashes: list[str], candidates: list[tuple[int, str]]) -> Match | None:
    """The chain continuing the longest prefix of the request: candidates are (id, head_hash) of chains whose
    head is current (nothing appended to them since). A chain's messages may differ from that prefix: a
    successor seeded by a compaction holds a summary in place of its start, and continues the same history."""
    position = {EMPTY_HASH: 0, **{h: i + 1 for i, h in enumerate(hashes)}}
    best: Match | None = None
    for chain_id, head_hash in candidates:
        known = position.get(head_hash)
        if known is not None and (best is None or known > best.known):
            best = Match(chain_id=chain_id, known=known)
    return best
