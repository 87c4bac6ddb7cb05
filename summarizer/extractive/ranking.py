"""Which identifiers a summary lists, in which order (issue 23 item 2): what the agent wrote or a finding holds
first, random-looking tokens nobody used last, so a list cut for space drops the banner hex, nonces and offsets
before a host name.

An identifier is *used* when the agent's own text (its notes, calls, the task, an earlier summary's lines but not
its identifier lists) or a finding (a credential, a hash, the line that reported it) quotes it. The rest keep
their order of appearance: first the ones that name something (hosts, paths, URLs, principals), then the
*random-looking* ones (bare hex runs, UUIDs, long numbers): a tool printed them and nothing referred to them again.
Noise classes (summarizer.extractive.facts.noise_identifiers) and payload-sized runs are set apart here too, and
the names (summarizer.identifiers.extract_names) are marked: a checkpoint's audit does not check them.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from typing import NamedTuple

from summarizer.compact.audit import MAX_ENFORCED_IDENTIFIER_CHARS
from summarizer.extractive.entries import (
    PREVIOUS_SUMMARY,
    Entry,
    named_identifiers,
    outside_text,
    parse_prompt,
    requested_headings,
)
from summarizer.extractive.facts import byte_size, noise_identifiers, original_spelling
from summarizer.extractive.sections import NOISE_LABEL, heading_group, is_identifier_list
from summarizer.identifiers import extract_findings, extract_identifiers, extract_names, is_case_insensitive_id

__all__ = ["rank_by_use", "is_random_looking", "listed_identifiers", "prompt_identifiers", "Listed"]

_LISTING_PREFIXES = ("- identifiers:", NOISE_LABEL.strip())  # the ledger's list and a checkpoint's noise line
_AGENT_KINDS = ("ai", "call", "task", "summary")  # what the agent (or the task, or a summary of it) wrote
_RANDOM_RE = re.compile(r"[0-9A-Fa-f]{8,}|[0-9A-Fa-f]{8}(?:-[0-9A-Fa-f]{4}){3}-[0-9A-Fa-f]{12}|\d{6,}")


def is_random_looking(identifier: str) -> bool:
    """A bare hex run, a UUID or a long number: opaque unless someone used it."""
    return bool(_RANDOM_RE.fullmatch(identifier))


def rank_by_use(identifiers: Iterable[str], used_text: str) -> list[str]:
    """`identifiers` reordered: the ones `used_text` quotes, then the other names, then the random-looking ones
    (each group in its input order). Hex runs, UUIDs and CVE ids are compared case-insensitively."""
    upper = used_text.upper()
    used: list[str] = []
    named: list[str] = []
    opaque: list[str] = []
    for identifier in identifiers:
        if identifier.upper() in upper if is_case_insensitive_id(identifier) else identifier in used_text:
            used.append(identifier)
        elif is_random_looking(identifier):
            opaque.append(identifier)
        else:
            named.append(identifier)
    return used + named + opaque


def _without_contained(ids: list[str]) -> list[str]:
    """`ids` minus those another one contains ("10.0.0.5" in "10.0.0.5:445", a dump cut short in the whole
    dump): listing the longer one quotes both, and the audit looks for each as a substring."""
    out: list[str] = []
    longer = ""
    for identifier in sorted(ids, key=len, reverse=True):
        folded = identifier.upper() in longer.upper() if is_case_insensitive_id(identifier) else identifier in longer
        if not folded:
            out.append(identifier)
            longer += "\n" + identifier
    keep = set(out)
    return [i for i in ids if i in keep]


def _payloads(spelled: list[str], room: int | None) -> list[str]:
    """The payload-sized runs to list: smallest first (the most that fit) within `room` bytes (None: all)."""
    out, used = [], 0
    for payload in sorted((i for i in spelled if len(i) > MAX_ENFORCED_IDENTIFIER_CHARS), key=len):
        used += byte_size(payload) + 2
        if room is not None and used > room:
            break
        out.append(payload)
    return out


class Listed(NamedTuple):
    ids: list[str]      # to list, best first
    noise: list[str]    # listed last in a checkpoint, dropped elsewhere
    spare: list[str]    # payloads that only take the room the lines leave
    names: set[str]     # the ids that are names (not audited)


def listed_identifiers(prompt: str, entries: list[Entry], *, checkpoint: bool,
                       payload_room: int | None = None) -> Listed:
    """(identifiers to list, noise, spare payloads, names): the ones a retry names first, then the ones the
    agent used (rank_by_use), as the input spells them. In a checkpoint the names the audit
    does not check come after everything it does.

    Noise (summarizer.extractive.facts.noise_identifiers) is dropped from a PentAGI summary and listed last,
    compactly, in a checkpoint, whose audit still counts it. Payload-sized runs (over
    MAX_ENFORCED_IDENTIFIER_CHARS: Kerberos tickets, base64 dumps) are not enforced by the audit and no
    checkpoint budget holds them, so a checkpoint reserves no room for them; a PentAGI summary lists them last,
    as many as fit in `payload_room` bytes: a 2 KB ticket blob is worth less than the lines it would push out.
    The payloads not listed are spare: they take whatever room the lines leave."""
    # What the audit checks (the new messages) before what only rolls forward (an earlier checkpoint's list).
    ordered = [e for e in entries if e.name != PREVIOUS_SUMMARY] + [e for e in entries if e.name == PREVIOUS_SUMMARY]
    source = "\n".join(e.text for e in ordered) + "\n" + outside_text(prompt)
    unique: dict[str, str] = {}
    named = named_identifiers(prompt)
    for identifier in named + extract_identifiers(source):
        unique.setdefault(identifier.upper() if is_case_insensitive_id(identifier) else identifier, identifier)
    names: set[str] = set()  # host, user, domain and CA names: listed, never audited (compaction.md §6)
    for name in extract_names(source):
        key = name.upper() if is_case_insensitive_id(name) else name
        if key not in unique:
            unique[key] = name
            names.add(name)
    spelled = original_spelling(list(unique.values()), source)
    # What the agent wrote: an earlier summary's lines count, not its identifier lists, or a nonce listed once
    # would be "said" by every later merge and never fall to the noise line again.
    said = [_without_id_lists(e.text) if e.kind == "summary" else e.text for e in entries if e.kind in _AGENT_KINDS]
    results = [e.text for e in entries if e.kind == "result"]
    noise = noise_identifiers(spelled, "\n".join([*said, *named]), results)
    # Ranked by use: what the agent wrote or a finding holds first.
    used = "\n".join([*named, *said, *(f"{f.value}\n{f.line}" for f in extract_findings("\n".join(results)))])
    ranked = rank_by_use(spelled, used)
    if checkpoint:  # what the audit checks first, the names it does not check after it
        ranked = [i for i in ranked if i not in names] + [i for i in ranked if i in names]
    short = [i for i in ranked if len(i) <= MAX_ENFORCED_IDENTIFIER_CHARS]
    spelled = _without_contained(spelled)
    payloads = [] if checkpoint else _payloads(spelled, payload_room)
    spare = [i for i in _payloads(spelled, None) if i not in payloads]
    listed_noise = [i for i in short if i in noise] if checkpoint else []
    return Listed([i for i in short if i not in noise] + payloads, listed_noise, spare, names)


def _without_id_lists(text: str) -> str:
    """`text` minus identifier lists (a briefing's line, a ledger's, a checkpoint's identifiers heading): an
    earlier summary listing a value is not the agent using it."""
    kept, listing = [], False
    for line in text.splitlines():
        if line.startswith("#"):
            listing = heading_group(line) == "ids"
        elif not (listing or is_identifier_list(line) or line.startswith(_LISTING_PREFIXES)):
            kept.append(line)
    return "\n".join(kept)


def prompt_identifiers(prompt: str) -> tuple[list[str], list[str]]:
    """(identifiers worth carrying, noise) of a summary prompt, as a summary of it would list them."""
    listed = listed_identifiers(prompt, parse_prompt(prompt), checkpoint=bool(requested_headings(prompt)))
    return listed.ids, listed.noise
