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
           "Match", "best_match", "HistoryMemo", "Conversion", "per_item"]

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


Msg = dict[str, Any]


@dataclass(frozen=True)
class Conversion:
    """How a wire's items (Chat messages, Responses input items, Anthropic turns) become our messages.

    `tail(items, start, before)`: our messages for `items[start:]`, where `before` are the messages `items[:start]`
    made (start 0: the whole request). `resumes(items, at)`: whether the messages of `items[:at]` are final
    whatever follows (`items[at]` begins a message of its own and nothing after it changes an earlier one), so
    converting the rest after them is exactly converting the whole; None when each item is exactly one message
    of its own (Chat Completions), so every prefix resumes.
    """

    tail: Callable[[list[Any], int, list[Msg]], list[Msg]]
    resumes: Callable[[list[Any], int], bool] | None = None


def per_item(convert: Callable[[Any, int], Msg]) -> Conversion:
    """The conversion of a wire whose every item is one message: `convert(item, index)`, a pure function."""
    return Conversion(lambda items, start, before: [convert(m, i) for i, m in enumerate(items[start:], start)])


@dataclass
class _Seen:
    raw: list[Any]  # the items as they came (parsed JSON)
    stored: list[Msg]  # what the conversion made of them
    hashes: list[str]  # prefix_hashes(stored)
    marks: tuple[tuple[int, int], ...]  # (items, messages): stored[:messages] is exactly what raw[:items] makes


_MARKS = 32  # the newest request ends of a history kept as places a resend may continue from


def _root_key(raw: list[Any], scope: Any) -> str:
    """Identifies a history by its start up to the first user message (the same root as `root_index`), within
    `scope` (what else the conversion reads: Responses' `instructions`, Anthropic's `system`)."""
    end = next((i for i, m in enumerate(raw) if isinstance(m, dict) and m.get("role") == "user"), 0)
    return json.dumps([scope, raw[:end + 1]], ensure_ascii=False, sort_keys=True, default=repr)


class HistoryMemo:
    """Per process: the newest request of each history (by its root), with its converted messages and prefix
    hashes (a bounded LRU). Agents resend their whole history on every call; with the memo only what a resend
    adds is converted and hashed, the rest is one C-level comparison with the previous request.

    Only ever a shortcut: what is reused belongs to items equal to the remembered ones and ends where the
    conversion `resumes`; the conversion must be a pure function of the items (and `scope`), so the result is
    exactly converting and hashing afresh. A tail that fails is converted again whole, so an error is the one
    the whole request gives (its index, its wording).
    """

    def __init__(self, size: int = 32) -> None:
        self.size, self.lock = size, threading.Lock()
        self.items: OrderedDict[str, _Seen] = OrderedDict()

    def derive(self, raw: list[Any], conversion: Conversion | Callable[[Any, int], Msg], scope: Any = None
               ) -> tuple[list[Msg], list[str]]:
        convert = conversion if isinstance(conversion, Conversion) else per_item(conversion)
        key = _root_key(raw, scope)
        with self.lock:
            seen = self.items.get(key)
        items, count = _reusable(seen, raw, convert)
        known = seen.stored[:count] if seen is not None else []
        stored, reused = _converted(raw, convert, items, known)
        hashes = prefix_hashes(stored, seen.hashes[:count] if seen is not None and reused else None)
        marks = tuple(m for m in seen.marks if m[0] <= items) if seen is not None and reused else ()
        with self.lock:
            self.items[key] = _Seen(raw, stored, hashes, (*marks, (len(raw), len(stored)))[-_MARKS:])
            self.items.move_to_end(key)
            while len(self.items) > self.size:
                self.items.popitem(last=False)
        return stored, hashes


def _reusable(seen: _Seen | None, raw: list[Any], convert: Conversion) -> tuple[int, int]:
    """(items, messages) of the remembered request that this one continues: 0, 0 when none."""
    if seen is None:
        return 0, 0
    common = _common_prefix(seen.raw, raw)
    if convert.resumes is None:
        return common, common
    for items, count in reversed(seen.marks):
        if items <= common and (items == len(raw) or convert.resumes(raw, items)):
            return items, count
    return 0, 0


def _converted(raw: list[Any], convert: Conversion, items: int, known: list[Msg]) -> tuple[list[Msg], bool]:
    """The request's messages, and whether the remembered ones were reused (the first `items` items)."""
    if items:
        try:
            return known + convert.tail(raw, items, known), True
        except Exception:  # noqa: BLE001 - converted whole below: the error the whole request gives
            pass
    return convert.tail(raw, 0, []), False


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
