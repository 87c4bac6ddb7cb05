"""Memory flush (compaction.md §8): facts about to leave the view are saved as durable flow notes first.

What counts as a fact: credentials, hashes and flags that tools printed (`extract_findings`), and opaque
identifiers (`extract_identifiers`: hosts, IPs, URLs, paths, hashes, CVE ids). Notes are unique per flow,
kind and text, so flushing the same span twice adds nothing.
"""
from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from typing import Any

from flows.engine import content_text, extract_findings, extract_identifiers
from flows.models import Chain, MemoryNote, SummaryEvent

__all__ = ["MAX_NOTES_PER_FLUSH", "MAX_NOTE_CHARS", "facts_in", "memory_flush", "identifier_text"]

MAX_NOTES_PER_FLUSH = 200  # a huge span must not flood the notes list; the first facts are the oldest
MAX_NOTE_CHARS = 500
_HOST_PORT_RE = re.compile(r"^[\w.-]+:\d{1,5}$")
_CREDENTIAL_KINDS = {"credential", "password", "hash", "flag"}


def identifier_text(message: dict[str, Any]) -> str:
    """What a message says, tool call arguments included (identifiers hide in commands)."""
    parts = [content_text(message)]
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        parts.append(f"{function.get('name', '')} {function.get('arguments', '')}")
    return "\n".join(p for p in parts if p)


def _is_host(identifier: str) -> bool:
    if identifier.startswith(("http://", "https://")) or _HOST_PORT_RE.match(identifier):
        return True
    try:
        ipaddress.ip_address(identifier)
    except ValueError:
        return False
    return True


def facts_in(messages: Sequence[dict[str, Any]]) -> list[tuple[str, str]]:
    """(kind, text) facts of the messages, unique, in order: credentials first, then hosts and identifiers."""
    text = "\n".join(identifier_text(m) for m in messages)
    facts: dict[tuple[str, str], None] = {}
    for finding in extract_findings(text):
        kind = "credential" if finding.kind in _CREDENTIAL_KINDS else "identifier"
        facts[(kind, str(finding)[:MAX_NOTE_CHARS])] = None
    for identifier in extract_identifiers(text):
        facts[("host" if _is_host(identifier) else "identifier", identifier[:MAX_NOTE_CHARS])] = None
    return list(facts)


def memory_flush(*, chain: Chain, event: SummaryEvent | None, leaving: Sequence[dict[str, Any]]) -> int:
    """Save the facts of the messages leaving the view as notes of the chain's flow; returns how many are new."""
    facts = facts_in(leaving)[:MAX_NOTES_PER_FLUSH]
    if not facts:
        return 0
    flow_id = chain.agent.flow_id
    existing = set(MemoryNote.objects.filter(flow_id=flow_id, text__in=[t for _, t in facts])
                   .values_list("kind", "text"))
    fresh = [MemoryNote(flow_id=flow_id, chain=chain, event=event, kind=kind, text=text)
             for kind, text in facts if (kind, text) not in existing]
    # ignore_conflicts: a concurrent flush of the same facts must not fail the compaction
    MemoryNote.objects.bulk_create(fresh, ignore_conflicts=True)
    return len(fresh)
