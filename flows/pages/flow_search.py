"""Search across every visible flow from the flows list: a message's text, a host, a hash.

One box, three places a user looks for the same thing: the raw messages (text and tool calls), the memory notes
saved before facts left the view, and the chains' history hashes (a prefix of at least HASH_MIN_CHARS hex
digits, as a gateway log shows it). Hits link to the message (`#m-N`), the note's flow or the chain. Reads only,
scoped by `visible_to`; at most HITS_SHOWN hits per place, newest first.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from django.db.models import Q, TextField
from django.db.models.functions import Cast

from flows.models import Chain, Flow, MemoryNote, Message

__all__ = ["MAX_QUERY_CHARS", "HITS_SHOWN", "SearchHit", "flows_search"]

MAX_QUERY_CHARS = 200
HITS_SHOWN = 50
HASH_MIN_CHARS = 8
SNIPPET_CHARS = 160
_HEX = re.compile(r"[0-9a-f]+")


@dataclass(frozen=True)
class SearchHit:
    kind: str  # message | note | chain
    flow_id: int
    flow_title: str
    chain_id: int | None
    seq: int | None
    snippet: str


def _snippet(text: str, q: str) -> str:
    """SNIPPET_CHARS around the first hit (the page escapes it)."""
    at = max(0, text.lower().find(q.lower()))
    start = max(0, at - SNIPPET_CHARS // 3)
    cut = text[start:start + SNIPPET_CHARS]
    return ("…" if start else "") + cut + ("…" if start + SNIPPET_CHARS < len(text) else "")


def _message_hits(user, q: str) -> list[SearchHit]:
    chains = Chain.objects.visible_to(user)
    rows = (Message.objects.filter(chain__in=chains)
            .annotate(_text=Cast("content", TextField()), _calls=Cast("tool_calls", TextField()))
            .filter(Q(_text__icontains=q) | Q(_calls__icontains=q))
            .order_by("-id").values("chain_id", "seq", "_text", "_calls", "chain__agent__flow_id",
                                    "chain__agent__flow__title")[:HITS_SHOWN])
    return [SearchHit("message", r["chain__agent__flow_id"], r["chain__agent__flow__title"], r["chain_id"], r["seq"],
                      _snippet(r["_text"] if q.lower() in (r["_text"] or "").lower() else r["_calls"] or "", q))
            for r in rows]


def _note_hits(user, q: str) -> list[SearchHit]:
    rows = (MemoryNote.objects.filter(flow__in=Flow.objects.visible_to(user), text__icontains=q).order_by("-id")
            .values("flow_id", "flow__title", "chain_id", "text", "kind")[:HITS_SHOWN])
    return [SearchHit("note", r["flow_id"], r["flow__title"], r["chain_id"], None, f'{r["kind"]}: {r["text"]}')
            for r in rows]


def _hash_hits(user, q: str) -> list[SearchHit]:
    if len(q) < HASH_MIN_CHARS or not _HEX.fullmatch(q.lower()):
        return []
    rows = (Chain.objects.visible_to(user).filter(head_hash__startswith=q.lower()).order_by("-id")
            .values("pk", "head_hash", "agent__flow_id", "agent__flow__title")[:HITS_SHOWN])
    return [SearchHit("chain", r["agent__flow_id"], r["agent__flow__title"], r["pk"], None, f'head {r["head_hash"]}')
            for r in rows]


def flows_search(*, user, q: str) -> list[SearchHit]:
    """Hits for `q` (trimmed, at most MAX_QUERY_CHARS) in the flows `user` may see: hashes, notes, messages."""
    q = q.strip()[:MAX_QUERY_CHARS]
    if not q:
        return []
    return _hash_hits(user, q) + _note_hits(user, q) + _message_hits(user, q)
