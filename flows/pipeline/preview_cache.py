"""Caches that make the settings preview answer as you type (bench/preview_latency.py measures it).

A preview re-runs the summarizer on the whole raw chain for every keystroke. Between two keystrokes the raw
chain is the same, and when it changes it only grows (raw messages are append-only), and most summarize
prompts are the same too (a changed `last_sec_bytes` moves one boundary; older sections' prompts stay). So we
keep, per process, in small LRU maps:
- per chain: its raw messages, seqs, token counts and each message's identifiers. A chain that grew is
  extended by its new rows only (nothing already read is read, converted or counted again). Token counts are
  the ones stored on the rows at append time (`Message.token_count`, what the chain page sums), counted here
  only for rows that have none;
- the extractive summarizer's answers by prompt: it is deterministic (same prompt, same summary), so a cached
  answer is exactly the answer it would give. Keyed by prompt only, so it outlives chain growth, and
  single-flight: a prompt already being summarized (say by the warm-up the settings page starts) is waited
  for, never summarized twice at once.
Nothing here is ever written to the database.
"""
from __future__ import annotations

import bisect
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from flows.engine import count_tokens, extract_identifiers, message_tokens
from flows.models import Message
from flows.pipeline import view_records as records
from flows.pipeline.memory import identifier_text

__all__ = ["ChainData", "chain_data", "cached_summarizer", "identifiers_of", "preview_caches_clear", "Lru"]

MAX_CHAINS = 8
MAX_SUMMARIES = 4096

K = TypeVar("K")
V = TypeVar("V")


class Lru(Generic[K, V]):
    """A small thread-safe LRU map (the preview's and the window estimate's per-process caches)."""

    def __init__(self, size: int) -> None:
        self.size, self.items, self.lock = size, OrderedDict[K, V](), threading.Lock()

    def get(self, key: K) -> V | None:
        with self.lock:
            value = self.items.get(key)
            if value is not None:
                self.items.move_to_end(key)
            return value

    def put(self, key: K, value: V) -> V:
        with self.lock:
            self.items[key] = value
            self.items.move_to_end(key)
            while len(self.items) > self.size:
                self.items.popitem(last=False)
        return value

    def clear(self) -> None:
        with self.lock:
            self.items.clear()


@dataclass(frozen=True)
class ChainData:
    """The raw chain up to `seqs[-1]`; never mutated once built (a grown chain gets a new one), except
    `identifiers`, filled lazily and shared by every ChainData of the chain (a message never changes)."""

    raw: list[dict[str, Any]]
    seqs: list[int]
    bytes: int
    tokens: int
    message_tokens: list[int] = field(default_factory=list)  # per raw message, without the reply priming
    identifiers: dict[int, list[str]] = field(default_factory=dict)  # seq -> identifiers, filled lazily


_ChainKey = tuple[int, str, str]  # chain pk, its creation time (a reused pk is another chain), model
_chains: Lru[_ChainKey, ChainData] = Lru(MAX_CHAINS)
_chains_building = threading.Lock()  # one reader per process extends a chain; the others then find it cached
_summaries: Lru[str, str] = Lru(MAX_SUMMARIES)
_in_flight: dict[str, threading.Event] = {}
_in_flight_lock = threading.Lock()


def _row_tokens(row: Message, message: dict[str, Any], model: str | None) -> int:
    return row.token_count if row.token_count is not None else message_tokens(message, model=model)


def _extended(old: ChainData | None, chain: Any, model: str | None) -> ChainData:
    """`old` plus the chain's rows after it (all rows when there is no `old`)."""
    after = old.seqs[-1] if old is not None and old.seqs else 0
    rows = list(Message.objects.filter(chain=chain, seq__gt=after, seq__lte=chain.last_seq).order_by("seq"))
    new = [m.to_dict() for m in rows]
    raw = (old.raw if old is not None else []) + new
    per_message = (old.message_tokens if old is not None else []) + [
        _row_tokens(row, m, model) for row, m in zip(rows, new, strict=True)]
    return ChainData(raw=raw, seqs=(old.seqs if old is not None else []) + [m.seq for m in rows],
                     bytes=records.view_bytes(raw), tokens=count_tokens([], model=model) + sum(per_message),
                     message_tokens=per_message, identifiers=old.identifiers if old is not None else {})


def _upto(data: ChainData, last_seq: int, model: str | None) -> ChainData:
    """`data` cut at `last_seq`: a caller holding an older chain object sees the chain as it knows it."""
    n = bisect.bisect_right(data.seqs, last_seq)
    raw, per_message = data.raw[:n], data.message_tokens[:n]
    return ChainData(raw=raw, seqs=data.seqs[:n], bytes=records.view_bytes(raw),
                     tokens=count_tokens([], model=model) + sum(per_message), message_tokens=per_message,
                     identifiers=data.identifiers)


def _last(data: ChainData) -> int:
    return data.seqs[-1] if data.seqs else 0


def chain_data(*, chain: Any, model: str | None) -> ChainData:
    """The chain's raw messages up to `chain.last_seq` with sizes; rows already read are never read again."""
    key = (chain.pk, chain.created_at.isoformat() if chain.created_at else "", model or "")
    cached = _chains.get(key)
    if cached is None or _last(cached) < chain.last_seq:
        with _chains_building:
            cached = _chains.get(key)
            if cached is None or _last(cached) < chain.last_seq:
                cached = _chains.put(key, _extended(cached, chain, model or None))
    return cached if _last(cached) == chain.last_seq else _upto(cached, chain.last_seq, model or None)


def identifiers_of(data: ChainData, seq: int, message: dict[str, Any]) -> list[str]:
    found = data.identifiers.get(seq)
    if found is None:
        found = data.identifiers[seq] = extract_identifiers(identifier_text(message))
    return found


def _summarize_once(key: str, compute: Callable[[], str]) -> str:
    """The cached answer for `key`; computed here unless another thread is computing it (then waited for)."""
    while True:
        hit = _summaries.get(key)
        if hit is not None:
            return hit
        with _in_flight_lock:
            hit = _summaries.get(key)
            if hit is not None:
                return hit
            event = _in_flight.get(key)
            mine = event is None
            if event is None:
                event = _in_flight[key] = threading.Event()
        if not mine:
            event.wait()  # then the answer is cached, or the owner failed and we try ourselves
            continue
        try:
            return _summaries.put(key, compute())
        finally:
            with _in_flight_lock:
                _in_flight.pop(key, None)
            event.set()


def cached_summarizer(summarize: Callable[[str], str]) -> Callable[[str], str]:
    """`summarize` answering repeated prompts from the cache (only for deterministic summarizers)."""
    name = getattr(summarize, "__name__", "summarize")

    def cached(prompt: str) -> str:
        key = name + ":" + hashlib.sha256(prompt.encode("utf-8", "surrogatepass")).hexdigest()
        return _summarize_once(key, lambda: summarize(prompt))

    cached.__name__ = name
    return cached


def preview_caches_clear() -> None:
    _chains.clear()
    _summaries.clear()
