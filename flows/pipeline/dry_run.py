"""What a manual compaction would produce, kept for its apply: the dry run's result and the state it was made on.

A dry run (`compaction.chain_dry_run`) computes a manual compaction exactly as the worker would, on the request
path, and writes nothing to the database: no event, no view, no memory notes, no hook; the model calls it makes
are held unsaved (`llm.calls_held`). Its result is kept in the cache (`DRY_RUN_SECONDS`) under a random
`preview_id`. Applying it (`chain_request_compaction(..., preview_id=...)`) reuses the previewed summary when
the chain has not moved since (same view version, same raw messages, same settings, same focus), so the
model is not asked again and the held calls are saved on the apply's event; otherwise the compaction is
recomputed and its event says why (`moved_since`).
"""
from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import dataclass, field
from typing import Any

from django.core.cache import cache

from flows.config import settings_values
from flows.engine import content_text, retention_of
from flows.models import Chain, LLMCall, Outcome, SummarizerSettings, SummaryEvent
from flows.pipeline import view_records as records
from flows.pipeline.runs import ChainState, RunStep

__all__ = ["DRY_RUN_SECONDS", "EXCERPT_CHARS", "DryRun", "Basis", "basis_of", "dry_run_from", "dry_run_keep",
           "dry_run_load", "moved_since", "step_from_dry_run"]

DRY_RUN_SECONDS = 30 * 60  # how long a preview can be applied as previewed; later the apply recomputes
EXCERPT_CHARS = 240
_KEY = "pentagi:compaction-dry-run:{}"

Msg = dict[str, Any]


@dataclass(frozen=True)
class Basis:
    """The state a compaction was computed on: when any part differs, the result no longer applies."""

    view_version: int
    last_seq: int
    settings_digest: str
    instructions: str
    active: bool


def basis_of(chain: Chain, row: SummarizerSettings, instructions: str) -> Basis:
    """The chain's view version and newest message as read with the state (`load_state`), or from the row on
    the request path (the same numbers: `view_save` keeps `chain.view_version`, appends keep `last_seq`)."""
    values = json.dumps(settings_values(row), sort_keys=True, default=str)
    return Basis(chain.view_version, chain.last_seq, hashlib.sha256(values.encode()).hexdigest(), instructions,
                 chain.is_active)


@dataclass
class DryRun:
    """A computed manual compaction that nothing has applied (yet)."""

    chain_id: int
    user_id: int | None
    basis: Basis
    outcome: str
    reason: str
    before: list[Msg]
    after: list[Msg]
    lineage: list[list[int]]
    tokens_before: int
    tokens_after: int
    calls: int
    duration_ms: int
    input_lineage: list[list[int]] = field(default_factory=list)  # raw seqs of each of `before`
    held: list[LLMCall] = field(default_factory=list)
    preview_id: int = 0

    @property
    def replaced_mask(self) -> list[bool]:
        return records.fresh_mask(self.before, self.after)

    def as_json(self) -> dict[str, Any]:
        """What the page and the API show: the summary, what it replaces, sizes, identifiers, model calls."""
        ok = self.outcome == Outcome.OK
        new = records.fresh_mask(self.after, self.before) if ok else []
        gone = [m for m, out in zip(self.before, self.replaced_mask, strict=False) if out] if ok else []
        bytes_before = records.view_bytes(self.before)
        return {
            "preview_id": self.preview_id if ok else None, "chain_id": self.chain_id, "outcome": self.outcome,
            "reason": self.reason, "instructions": self.basis.instructions,
            "based_on": {"view_version": self.basis.view_version, "last_seq": self.basis.last_seq},
            "tokens_before": self.tokens_before, "tokens_after": self.tokens_after if ok else self.tokens_before,
            "bytes_before": bytes_before, "bytes_after": records.view_bytes(self.after) if ok else bytes_before,
            "messages_before": len(self.before), "messages_after": len(self.after) if ok else len(self.before),
            "summary_text": records.summary_text(self.after, new) if ok else "",
            "replaces_seqs": records.covered_ranges(self.lineage, new) if ok else [],
            "replaced": _replaced_rows(self.before, self.replaced_mask, self.input_lineage) if ok else [],
            "kept_messages": (len(self.after) - sum(new)) if ok else len(self.before),
            "retention": retention_of(gone, self.after).as_dict() if gone else None,
            "calls": self.calls, "cost_usd": round(sum(c.cost_usd for c in self.held), 6),
            "models": sorted({c.model for c in self.held if c.model}), "duration_ms": self.duration_ms,
            "expires_in_seconds": DRY_RUN_SECONDS if ok else 0,
        }


def _replaced_rows(before: list[Msg], mask: list[bool], lineage: list[list[int]]) -> list[dict[str, Any]]:
    """One row per message that leaves the view: its raw seqs, role, size and the start of its text."""
    rows = []
    for index, (message, out) in enumerate(zip(before, mask, strict=False)):
        if not out:
            continue
        text = content_text(message)
        calls = [str((c.get("function") or {}).get("name", "")) for c in message.get("tool_calls") or ()]
        seqs = lineage[index] if index < len(lineage) else []
        rows.append({"seqs": records.seq_ranges(seqs), "first_seq": min(seqs, default=0),
                     "role": str(message.get("role", "")), "bytes": len(text.encode("utf-8")),
                     "excerpt": text[:EXCERPT_CHARS], "truncated": len(text) > EXCERPT_CHARS,
                     "tool_calls": [c for c in calls if c]})
    return rows


def dry_run_from(state: ChainState, step: RunStep, *, instructions: str, user_id: int | None,
                 held: list[LLMCall]) -> DryRun:
    return DryRun(chain_id=state.chain.pk, user_id=user_id, basis=basis_of(state.chain, state.row, instructions),
                 outcome=step.outcome, reason=step.full_reason, before=step.before, after=step.after,
                 lineage=step.lineage, tokens_before=step.tokens_before, tokens_after=step.tokens_after,
                 calls=step.calls, duration_ms=step.duration_ms, input_lineage=state.lineage, held=held)


def dry_run_keep(run: DryRun) -> int:
    """Keep a successful dry run for its apply; returns its preview id."""
    run.preview_id = secrets.randbelow(2**53 - 1) + 1  # a JSON-safe integer id, like the task's other arguments
    cache.set(_KEY.format(run.preview_id), run, DRY_RUN_SECONDS)
    return run.preview_id


def dry_run_load(preview_id: int | None, *, chain_id: int) -> DryRun | None:
    """The kept dry run of this chain (None: unknown, expired, or another chain's)."""
    if not preview_id:
        return None
    run = cache.get(_KEY.format(preview_id))
    return run if isinstance(run, DryRun) and run.chain_id == chain_id else None


def moved_since(run: DryRun | None, chain: Chain, row: SummarizerSettings, instructions: str) -> str:
    """Why the dry run's result cannot be applied to the chain as it is now ("" when it can)."""
    if run is None:
        return "the dry run expired or was made on another server"
    now, then = basis_of(chain, row, instructions), run.basis
    if now.instructions != then.instructions:
        return "the focus instructions differ from the dry run's"
    if now.active != then.active:
        return "the chain was archived since the dry run (it continues in a successor)"
    if now.view_version != then.view_version:
        return f"the view changed since the dry run (v{then.view_version} then, v{now.view_version} now)"
    if now.last_seq != then.last_seq:
        return f"{now.last_seq - then.last_seq} message(s) arrived since the dry run"
    if now.settings_digest != then.settings_digest:
        return "the settings changed since the dry run"
    return ""


def step_from_dry_run(run: DryRun, event: SummaryEvent) -> RunStep:
    """The apply's step, made of the dry run's result; its held model calls are saved on `event`."""
    for call in run.held:
        call.pk, call.event = None, event
    LLMCall.objects.bulk_create(run.held)
    return RunStep(trigger=event.trigger, outcome=run.outcome, event=event, reason=run.reason, before=run.before,
                   after=run.after, lineage=run.lineage, calls=run.calls, duration_ms=run.duration_ms,
                   tokens_before=run.tokens_before, tokens_after=run.tokens_after)
