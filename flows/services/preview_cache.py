"""Caches that make the settings preview answer as you type (bench/preview_latency.py measures it).

A preview re-runs the summarizer on the whole raw chain for every keystroke. Between two keystrokes the raw
chain is the same (it only grows: keyed by chain id and last seq) and most summarize prompts are the same too
(a changed `last_sec_bytes` moves one boundary; the older sections' prompts do not change). So we keep, per
process, in small LRU maps:
- the chain's raw messages, their seqs, bytes, tokens and each message's identifiers (what the page would
  otherwise read, convert and tokenize on every request);
- the extractive summarizer's answers by prompt: it is deterministic (same prompt, same summary), so a cached
  answer is exactly the answer it would give.
Nothing here is ever written to the database.
"""
from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from flows.engine import extract_identifiers
from flows.models import Message
from flows.services import view_records as records
from flows.services.memory import identifier_text

__all__ = ["ChainData", "chain_data", "cached_summarizer", "identifiers_of", "preview_caches_clear"]

MAX_CHAINS = 8
MAX_SUMMARIES = 4096

K = TypeVar("K")
V = TypeVar("V")


class _Lru(Generic[K, V]):
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


@dataclass
class ChainData:
    raw: list[dict[str, Any]]
    seqs: list[int]
    bytes: int
    tokens: int
    identifiers: dict[int, list[str]] = field(default_factory=dict)  # seq -> identifiers, filled lazily


_chains: _Lru[tuple[int, int, str], ChainData] = _Lru(MAX_CHAINS)
_summaries: _Lru[str, str] = _Lru(MAX_SUMMARIES)


def chain_data(*, chain: Any, model: str | None) -> ChainData:
    """The chain's raw messages with sizes, read and counted once per (chain, last seq, model)."""
    key = (chain.pk, chain.last_seq, model or "")
    cached = _chains.get(key)
    if cached is not None:
        return cached
    rows = list(Message.objects.filter(chain=chain, seq__lte=chain.last_seq).order_by("seq"))
    raw = [m.to_dict() for m in rows]
    return _chains.put(key, ChainData(raw=raw, seqs=[m.seq for m in rows], bytes=records.view_bytes(raw),
                                      tokens=records.view_tokens(raw, model=model)))


def identifiers_of(data: ChainData, seq: int, message: dict[str, Any]) -> list[str]:
    found = data.identifiers.get(seq)
    if found is None:
        found = data.identifiers[seq] = extract_identifiers(identifier_text(message))
    return found


def cached_summarizer(summarize: Callable[[str], str]) -> Callable[[str], str]:
    """`summarize` answering repeated prompts from the cache (only for deterministic summarizers)."""
    name = getattr(summarize, "__name__", "summarize")

    def cached(prompt: str) -> str:
        key = name + ":" + hashlib.sha256(prompt.encode("utf-8", "surrogatepass")).hexdigest()
        hit = _summaries.get(key)
        return hit if hit is not None else _summaries.put(key, summarize(prompt))

    cached.__name__ = name
    return cached


def preview_caches_clear() -> None:
    _chains.clear()
    _summaries.clear()
