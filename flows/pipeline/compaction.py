"""Compactions of a chain's view: manual "compact now", the byte guard and successor segments.

A compaction reads the same state as a summarization (view + new raw), computes outside any transaction,
and saves through `runs.view_save` (version-checked). With `truncate_after_compaction` a successful manual
or byte-guard compaction starts a successor chain (compaction.md §7): the old chain is archived unchanged,
the new one is seeded with the summary and the kept tail, minus retried duplicates of long user messages.
Window and overflow fits (`flows.pipeline.fitting`) only change the view (they run before model calls) and
never rotate.
"""
from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from flows.config import settings_for, settings_values
from flows.core import COMPACT_CHAIN, MAX_INSTRUCTIONS_CHARS, NOT_QUEUED_REASON, BrokerUnreachable, enqueue
from flows.engine import compact_now, content_text
from flows.ingest import chain_append
from flows.models import Chain, Message, Outcome, SummaryEvent, Trigger
from flows.pipeline import view_records as records
from flows.pipeline.dry_run import DryRun, dry_run_from, dry_run_keep, dry_run_load, moved_since, step_from_dry_run
from flows.pipeline.fitting import compute_step, hook_before, memory_flush_step, policy_options
from flows.pipeline.llm import calls_held
from flows.pipeline.runs import (
    MAX_SAVE_ATTEMPTS,
    ChainState,
    RunStep,
    event_fail,
    event_finish,
    event_start,
    hook_after_payload,
    load_state,
    on_view_saved,
    view_create,
    view_save,
    window_for,
)
from flows.pipeline.summarizers import SummarizeFn

__all__ = [
    "DUPLICATE_MIN_CHARS", "DUPLICATE_WINDOW_SECONDS", "MAX_INSTRUCTIONS_CHARS", "chain_compact",
    "chain_request_compaction", "chain_dry_run", "dry_run_moved", "byte_guard_due",
    "chain_guard", "drop_retried_user_messages",
]

DUPLICATE_MIN_CHARS = 24  # shorter user messages ("next", "yes") repeat legitimately
DUPLICATE_WINDOW_SECONDS = 60
_SPACES_RE = re.compile(r"\s+")

Msg = dict[str, Any]


def _compact_step(state: ChainState, event: SummaryEvent | None, instructions: str, *,
                  trigger: str = Trigger.MANUAL) -> RunStep:
    """The compaction of `state`; without an event it is a dry run (no hook, nothing written)."""
    before, lineage, row = state.messages, state.lineage, state.row
    tokens = records.view_tokens(before, model=state.model)
    step = RunStep(trigger=trigger, outcome=Outcome.OK, event=event, before=before, tokens_before=tokens)
    if not before:
        step.outcome = Outcome.SKIPPED
        step.reason = ("nothing to compact: the chain is empty" if not state.pending_raw else
                       "nothing to compact: the chain holds only a tool round still waiting for its results")
        return step
    if event is not None:
        hook_before(state, event, before, tokens)
    window = window_for(flow=state.chain.agent.flow, row=row, chain_id=state.chain.pk)

    def run(summarize: SummarizeFn) -> Any:
        # keep_recent_tokens 0 makes compact_now a hard checkpoint: the view continues from the summary only
        return compact_now(before, summarize=summarize, instructions=instructions[:MAX_INSTRUCTIONS_CHARS] or None,
                           keep_recent_tokens=row.keep_recent_tokens, model=state.model or None,
                           window_tokens=window[0] if window else None, **policy_options(row))

    step = compute_step(state, step, before, lineage, run, dry_run=event is None)
    if step.outcome == Outcome.OK:
        step.reason = _compact_reason(state, trigger, instructions, tokens)
    elif step.outcome == Outcome.SKIPPED and 0 < tokens <= row.keep_recent_tokens:
        step.reason = (f"nothing to compact: the view's {tokens:,} tokens are within keep_recent_tokens "
                       f"({row.keep_recent_tokens:,}), which a compaction keeps verbatim")
    return step


def _compact_reason(state: ChainState, trigger: str, instructions: str, tokens: int) -> str:
    """Why a compaction ran, in words and numbers (issue 23)."""
    kept = state.row.keep_recent_tokens
    tail = f"kept the newest {kept:,} tokens" if kept > 0 else "hard checkpoint (keep_recent_tokens 0)"
    if trigger == Trigger.BYTE_GUARD:
        size = active_bytes(state.chain)
        return (f"active transcript {size:,} bytes >= max_active_transcript_bytes "
                f"{state.row.max_active_transcript_bytes:,}: view of {tokens:,} tokens compacted, {tail}")
    focus = " with focus instructions" if instructions else ""
    return f"compaction requested{focus}: view of {tokens:,} tokens summarized, {tail}"


# ----------------------------------------------------------------------------------------------- manual

def chain_dry_run(*, chain: Chain, instructions: str = "", user: Any = None) -> DryRun:
    """What "compact now" with `instructions` would produce, computed here and now and written nowhere (the
    model calls it makes are held, not recorded); a successful one is kept for its apply (`preview_id`)."""
    state = load_state(chain.pk)
    instructions = (instructions or "")[:MAX_INSTRUCTIONS_CHARS]
    with calls_held() as held:
        step = _compact_step(state, None, instructions)
    run = dry_run_from(state, step, instructions=instructions, user_id=getattr(user, "pk", None), held=held)
    if run.outcome == Outcome.OK:
        dry_run_keep(run)
    return run


def dry_run_moved(*, chain: Chain, preview_id: int, instructions: str) -> str:
    """Why applying dry run `preview_id` will recompute instead of reusing its summary ("" when it reuses it)."""
    row = settings_for(profile=chain.agent.profile, flow=chain.agent.flow)
    return moved_since(dry_run_load(preview_id, chain_id=chain.pk), chain, row, instructions)


def chain_request_compaction(*, chain: Chain, instructions: str = "", user: Any = None,
                             preview_id: int | None = None) -> SummaryEvent:
    """Record a RUNNING manual compaction and queue it after commit (the API and the page call this); with
    `preview_id` the worker applies that dry run's result when the chain has not moved since.

    `user` is accepted for the callers' convenience; who asked is not stored (SummaryEvent has no such field).
    """
    row = settings_for(profile=chain.agent.profile, flow=chain.agent.flow)
    with transaction.atomic():
        event = event_start(chain=chain, trigger=Trigger.MANUAL, snapshot=settings_values(row),
                            notify=row.notify_user, instructions=(instructions or "")[:MAX_INSTRUCTIONS_CHARS])
        chain_id = chain.pk
        transaction.on_commit(lambda: _compaction_queue(chain_id, event, preview_id))
    return event


def _compaction_queue(chain_id: int, event: SummaryEvent, preview_id: int | None) -> None:
    """Queue the recorded compaction; when the broker does not answer, its event is closed as failed (nothing
    would ever run it) and BrokerUnreachable goes on to the caller, who answers 503."""
    try:
        enqueue(COMPACT_CHAIN, chain_id, event.pk, *([preview_id] if preview_id else []))
    except BrokerUnreachable:
        event_fail(event, NOT_QUEUED_REASON)
        raise


def chain_compact(*, chain_id: int, instructions: str = "", event_id: int | None = None,
                  preview_id: int | None = None) -> SummaryEvent:
    """Compact now (manual): summary + kept tail, or a hard checkpoint when keep_recent_tokens is 0; the
    result of dry run `preview_id` when the chain has not moved since it."""
    previewed = dry_run_load(preview_id, chain_id=chain_id) if preview_id else None
    return _compaction(chain_id=chain_id, trigger=Trigger.MANUAL, instructions=instructions, event_id=event_id,
                       previewed=previewed, preview_wanted=bool(preview_id))


def _applied_step(state: ChainState, event: SummaryEvent, instructions: str, previewed: DryRun | None,
                  preview_wanted: bool) -> RunStep:
    """The dry run's result when it still applies (its summary, no model asked again), else a fresh compaction
    whose reason says why the dry run's was not used."""
    moved = moved_since(previewed, state.chain, state.row, instructions) if preview_wanted else ""
    if previewed is not None and not moved:
        hook_before(state, event, previewed.before, previewed.tokens_before)
        step = step_from_dry_run(previewed, event)
        memory_flush_step(state, step)
        step.reason = f"{step.reason}; applied the dry run's result (no model asked again)"
        return step
    step = _compact_step(state, event, instructions, trigger=event.trigger)
    if moved:
        step.reason = f"{step.reason}; recomputed: {moved}"
    return step


def _compaction(*, chain_id: int, trigger: str, instructions: str = "", event_id: int | None = None,
                state: ChainState | None = None, keep_new_raw_on_failure: bool = True,
                previewed: DryRun | None = None, preview_wanted: bool = False) -> SummaryEvent:
    """Run one compaction to completion; `keep_new_raw_on_failure` writes the unsummarized new messages
    into a view when the compaction fails (off for the byte guard: the turn's summarization follows)."""
    event = SummaryEvent.objects.filter(pk=event_id, chain_id=chain_id).first() if event_id else None
    if event is not None and event.outcome != Outcome.RUNNING:
        return event  # a re-delivered task: this compaction already finished
    for _attempt in range(MAX_SAVE_ATTEMPTS):
        state = state or load_state(chain_id)
        snapshot = settings_values(state.row)
        event = event or event_start(chain=state.chain, trigger=trigger, snapshot=snapshot,
                                     notify=state.row.notify_user, instructions=instructions)
        step = _applied_step(state, event, instructions, previewed, preview_wanted)
        ok = step.outcome == Outcome.OK
        if ok and state.row.truncate_after_compaction and state.chain.is_active:
            saved = _save_with_successor(state, step, snapshot)
        else:
            saved = view_save(state, messages=step.after if ok else state.messages,
                              lineage=step.lineage if ok else state.lineage, steps=[step], snapshot=snapshot,
                              notify=state.row.notify_user,
                              write_view=ok or (keep_new_raw_on_failure and bool(state.new_raw)))
        if saved is not None:
            return saved[0]
        state = None
    assert event is not None  # MAX_SAVE_ATTEMPTS >= 1: the first attempt started (or found) the event
    return event_fail(event, "superseded: the view kept changing during the compaction")


# ----------------------------------------------------------------------------------------------- byte guard

def active_bytes(chain: Chain) -> int:
    return Message.objects.filter(chain=chain).aggregate(total=Sum("byte_size"))["total"] or 0


def byte_guard_due(state: ChainState) -> bool:
    """The guard only works with successor segments (otherwise the active segment never shrinks)."""
    row = state.row
    if row.max_active_transcript_bytes <= 0 or not row.truncate_after_compaction or not state.chain.is_active:
        return False
    return active_bytes(state.chain) >= row.max_active_transcript_bytes


def chain_guard(*, state: ChainState) -> SummaryEvent:
    """Compact before the next turn because the active segment reached the byte guard; rotates on success."""
    return _compaction(chain_id=state.chain.pk, trigger=Trigger.BYTE_GUARD, state=state,
                       keep_new_raw_on_failure=False)


# ----------------------------------------------------------------------------------------------- successors

def _normalized(message: Msg) -> str:
    return _SPACES_RE.sub(" ", content_text(message)).strip()


def drop_retried_user_messages(messages: list[Msg], times: list[datetime | None]) -> list[int]:
    """Indices to keep: a long user message repeated (same sender, same text after whitespace normalisation)
    within DUPLICATE_WINDOW_SECONDS of the previous copy, with no assistant message between, is a retry."""
    keep: list[int] = []
    seen: dict[tuple[str, str], datetime] = {}
    for index, (message, at) in enumerate(zip(messages, times, strict=False)):
        if message["role"] == "assistant":
            seen.clear()
        elif message["role"] == "user" and at is not None:
            text = _normalized(message)
            key = (message.get("name") or "", text)
            previous = seen.get(key)
            if len(text) >= DUPLICATE_MIN_CHARS and previous is not None \
                    and abs((at - previous).total_seconds()) <= DUPLICATE_WINDOW_SECONDS:
                continue
            seen[key] = at
        keep.append(index)
    return keep


def _times_of(state: ChainState, step: RunStep) -> list[datetime | None]:
    """When each kept message was first written (from its single raw seq); summaries have no time."""
    fresh = records.fresh_mask(step.after, step.before)
    seqs = {lin[0] for lin, new in zip(step.lineage, fresh, strict=False) if not new and len(lin) == 1}
    created = dict(Message.objects.filter(chain=state.chain, seq__in=seqs).values_list("seq", "created_at"))
    return [created.get(lin[0]) if not new and len(lin) == 1 else None
            for lin, new in zip(step.lineage, fresh, strict=False)]


def _carry_head(chain: Chain, successor: Chain) -> None:
    """The gateway threads an agent's next request by the raw history it resends, which the successor continues:
    it takes over the archived chain's head (when that was current), so the next request extends it."""
    if chain.head_hash and chain.head_seq == chain.last_seq:
        Chain.objects.filter(pk=successor.pk).update(head_hash=chain.head_hash, root_hash=chain.root_hash,
                                                     head_seq=successor.last_seq)


def _save_with_successor(state: ChainState, step: RunStep, snapshot: dict[str, Any]) -> list[SummaryEvent] | None:
    """Archive the chain unchanged and continue in a successor seeded with the compacted view.

    An open tool round (never part of a view) follows the seed as raw messages, so its results still find their
    calls; messages appended since the state was loaded make the save stale, else the successor would lose them."""
    keep = drop_retried_user_messages(step.after, _times_of(state, step))
    seeded = [step.after[i] for i in keep]
    pending = [m.to_dict() for m in state.pending_raw]
    with transaction.atomic():
        chain = Chain.objects.select_for_update().get(pk=state.chain.pk)
        if chain.view_version != state.base_version or not chain.is_active or chain.last_seq != state.sendable_seq_to:
            return None
        compactions = chain.compactions + 1
        Chain.objects.filter(pk=chain.pk).update(is_active=False, compactions=compactions,
                                                 updated_at=timezone.now())
        successor = Chain.objects.create(agent_id=chain.agent_id, parent=chain, compactions=compactions,
                                         tool_call_id_template=chain.tool_call_id_template)
        chain_append(chain=successor, messages=seeded + pending)
        _carry_head(chain, successor)
        successor.view_version = 0
        view = view_create(successor, seeded, [[i + 1] for i in range(len(seeded))], raw_seq_to=len(seeded),
                            snapshot=snapshot, model=state.model or None)
        Chain.objects.filter(pk=successor.pk).update(view_version=view.version)
        step.reason = f"continued in successor chain #{successor.pk}"
        event = event_finish(step, chain=chain, snapshot=snapshot, raw_seq_to=state.raw_seq_to, view=view)
        notify, hooks = state.row.notify_user, [hook_after_payload(step, event)]
        transaction.on_commit(lambda: on_view_saved(chain.pk, None, [event], compactions, notify, hooks), robust=True)
        transaction.on_commit(lambda: on_view_saved(successor.pk, view, [], compactions, False, []), robust=True)
    return [event]
