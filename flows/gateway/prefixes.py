"""Threading requests into chains: normalised messages and rolling prefix hashes (pure, no database).

Agents resend their whole history on every call. `prefix_hashes(messages)[i]` identifies messages[0..i]; a
chain stores the hash of its raw history (`Chain.head_hash`), so the chain a request continues is the one
whose head hash is among the request's prefix hashes, found with one indexed query. The database work does
not grow with the history, and neither does the per-message work in the common case: `HistoryMemo` remembers
the last request of each history (by its root) with its converted messages and hashes, so a resend only
compares the known messages (C-level dict equality, ~50x cheaper than converting and hashing them) and
converts and hashes the new ones.
"""
from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["EMPTY_HASH", "normalised", "message_digest", "extend_hash", "prefix_hashes", "root_index",
           "Match", "best_match", "HistoryMemo"]

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


def _common_prefix(a: list[Any], b: list[Any]) -> int:
    n = min(len(a), len(b))
    if a[:n] == b[:n]:  # the usual resend: one C-level comparison of the whole known history
        return n
    i = 0
    while a[i] == b[i]:
        i += 1
    return i


@dataclass
class _Seen:
    raw: list[Any]  # the messages as they came (parsed JSON)
    stored: list[dict[str, Any]]  # what `convert` made of each
    hashes: list[str]  # prefix_hashes(stored)


def _root_key(raw: list[Any]) -> str:
    """Identifies a history by its start up to the first user message (the same root as `root_index`)."""
    end = next((i for i, m in enumerate(raw) if isinstance(m, dict) and m.get("role") == "user"), 0)
    return json.dumps(raw[:end + 1], ensure_ascii=False, sort_keys=True, default=repr)


class HistoryMemo:
    """Per process: the newest request of each history (by its root), with its converted messages and prefix
    hashes (a bounded LRU). Agents resend their whole history on every call; with the memo only what a resend
    adds is converted and hashed, the rest is one C-level comparison with the previous request.

    Only ever a shortcut: what is reused belongs to messages equal to the remembered ones, and `convert` must be
    a pure function of (message, index), so the result is exactly converting and hashing afresh.
    """

    def __init__(self, size: int = 32) -> None:
        self.size, self.lock = size, threading.Lock()
        self.items: OrderedDict[str, _Seen] = OrderedDict()

    def derive(self, raw: list[Any], convert: Callable[[Any, int], dict[str, Any]]) -> tuple[
            list[dict[str, Any]], list[str]]:
        key = _root_key(raw)
        with self.lock:
            seen = self.items.get(key)
        known = _common_prefix(seen.raw, raw) if seen is not None else 0
        stored = (seen.stored[:known] if seen is not None else []) + [
            convert(message, index) for index, message in enumerate(raw[known:], start=known)]
        hashes = prefix_hashes(stored, seen.hashes[:known] if seen is not None else None)
        with self.lock:
            self.items[key] = _Seen(raw, stored, hashes)
            self.items.move_to_end(key)
            while len(self.items) > self.size:
                self.items.popitem(last=False)
        return stored, hashes


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
