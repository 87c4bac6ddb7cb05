"""Pure helpers that describe a view for storage: lineage in raw seqs, sections, covered ranges, sizes.

Nothing here touches the database; `flows.pipeline.runs` decides what to save. Lineage is always in raw
seqs of the chain (1-based), per view message, so the UI can point from any view message to the raw
messages it stands for, through any number of summarizations.
"""
from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from typing import Any

from flows.engine import ChainError, MessageError, chain_bytes, content_text, count_tokens, parse_chain

__all__ = [
    "HUMAN_PREVIEW_CHARS", "compose_lineage", "align_lineage", "fresh_mask", "covered_ranges", "summary_text",
    "section_records", "view_bytes", "view_tokens", "seq_ranges",
]

log = logging.getLogger(__name__)

HUMAN_PREVIEW_CHARS = 200
SUMMARY_SEPARATOR = "\n\n---\n\n"

Message = dict[str, Any]


def _key(message: Message) -> str:
    return json.dumps(message, sort_keys=True, ensure_ascii=False)


def compose_lineage(out_lineage: Sequence[Sequence[int]], lineage_in: Sequence[Sequence[int]]) -> list[list[int]]:
    """Map an engine lineage (per output message, input indices) to raw seqs via the inputs' own lineage."""
    composed = []
    for indices in out_lineage:
        seqs: set[int] = set()
        for index in indices:
            if 0 <= index < len(lineage_in):
                seqs.update(lineage_in[index])
        composed.append(sorted(seqs))
    return composed


def align_lineage(out: Sequence[Message], inputs: Sequence[Message],
                  lineage_in: Sequence[Sequence[int]]) -> list[list[int]]:
    """Lineage for a result that carries none: verbatim messages keep theirs (matched in order); a new
    message (a summary, a truncated result) stands for the inputs skipped since the previous match."""
    keys = [_key(m) for m in inputs]
    out_lineage: list[list[int]] = []
    cursor, pending = 0, []
    for message in out:
        key = _key(message)
        match = next((i for i in range(cursor, len(keys)) if keys[i] == key), None)
        if match is None:
            pending.append(len(out_lineage))
            out_lineage.append([])
            continue
        skipped = [i for i in range(cursor, match)]
        for slot in pending:
            out_lineage[slot] = skipped
        if not pending and skipped:  # dropped inputs with no summary: attach them to nothing (truly removed)
            log.debug("inputs %s left the view without a summary", skipped)
        pending, cursor = [], match + 1
        out_lineage.append([match])
    for slot in pending:
        out_lineage[slot] = list(range(cursor, len(keys)))
    return compose_lineage(out_lineage, lineage_in)


def fresh_mask(out: Sequence[Message], inputs: Sequence[Message]) -> list[bool]:
    """True for output messages that are not verbatim inputs: the summaries (or truncations) a run wrote."""
    known = {_key(m) for m in inputs}
    return [_key(m) not in known for m in out]


def seq_ranges(seqs: Iterable[int]) -> list[list[int]]:
    """Sorted seqs as inclusive [from, to] ranges: {1,2,3,7} -> [[1, 3], [7, 7]]."""
    ranges: list[list[int]] = []
    for seq in sorted(set(seqs)):
        if ranges and seq == ranges[-1][1] + 1:
            ranges[-1][1] = seq
        else:
            ranges.append([seq, seq])
    return ranges


def covered_ranges(lineage: Sequence[Sequence[int]], mask: Sequence[bool]) -> list[list[int]]:
    """The raw seq ranges that the run's new messages stand for."""
    return seq_ranges(seq for lin, fresh in zip(lineage, mask, strict=False) if fresh for seq in lin)


def summary_text(out: Sequence[Message], mask: Sequence[bool]) -> str:
    """Texts of the new messages (summary tool results, prefixed completions, compaction user messages)."""
    texts = [content_text(m) for m, fresh in zip(out, mask, strict=False) if fresh]
    return SUMMARY_SEPARATOR.join(t for t in texts if t)


def view_bytes(messages: list[Message]) -> int:
    return chain_bytes(messages)


def view_tokens(messages: list[Message], *, model: str | None) -> int:
    return count_tokens(messages, model=model or None)


def _header_record(header: Any, lineage_of: dict[int, list[int]], start: int) -> tuple[dict[str, Any], int]:
    human = header.human
    count = len(header.messages())
    record = {
        "system_bytes": _size(header.system), "human_bytes": _size(human),
        "human_preview": content_text(human)[:HUMAN_PREVIEW_CHARS] if human is not None else "",
        "raw_seqs": sorted({s for i in range(start, start + count) for s in lineage_of.get(i, [])}),
        "view_range": [start, start + count],
    }
    return record, count


def _size(message: Message | None) -> int:
    return chain_bytes([message]) if message is not None else 0


def section_records(messages: list[Message], lineage: Sequence[Sequence[int]]) -> list[dict[str, Any]]:
    """Per section: header bytes + preview and pairs [{kind, size, summary, raw_seqs, view_range}]."""
    try:
        ast = parse_chain(messages, force=True)
    except (ChainError, MessageError, ValueError) as exc:  # an unparsable view is still stored, unstructured
        log.warning("view does not parse into sections: %s", exc)
        return []
    lineage_of = {i: list(lin) for i, lin in enumerate(lineage)}
    records, cursor = [], 0
    for index, section in enumerate(ast.sections):
        header, used = _header_record(section.header, lineage_of, cursor)
        cursor += used
        pairs = []
        for pair in section.body:
            count = len(pair.messages())
            seqs = sorted({s for i in range(cursor, cursor + count) for s in lineage_of.get(i, [])})
            pairs.append({"kind": pair.kind, "size": pair.size, "summary": pair.is_summary, "raw_seqs": seqs,
                          "view_range": [cursor, min(cursor + count, len(messages))]})
            cursor += count
        records.append({"index": index, "header": header, "pairs": pairs, "byte_size": section.size})
    return records
