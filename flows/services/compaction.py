"""Compactions of a chain's view: window fit, manual "compact now", the byte guard and successor segments.

A compaction reads the same state as a summarization (view + new raw), computes outside any transaction,
and saves through `views.save_view` (version-checked). With `truncate_after_compaction` a successful manual
or byte-guard compaction starts a successor chain (compaction.md §7): the old chain is archived unchanged,
the new one is seeded with the summary and the kept tail, minus retried duplicates of long user messages.
Window and overflow fits only change the view (they run before model calls) and never rotate.
"""
from __future__ import annotations

import re
import time
from datetime import datetime
from typing import Any, Callable

from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from flows.models import Chain, Message, Outcome, SummaryEvent, Trigger
from flows.services import view_records as records
from flows.services.memory import memory_flush
from flows.services.views import (
    MAX_SAVE_ATTEMPTS, ChainState, RunStep, after_save, create_view, event_finish, event_start, fail_event,
    hook_after_payload, load_state, save_view,
)
from flows.signals import before_compaction, send_hook
from flows.text_input import MAX_INSTRUCTIONS_CHARS  # compaction.md §5; one cap for API, page and prompt

__all__ = [
    "DUPLICATE_MIN_CHARS", "DUPLICATE_WINDOW_SECONDS", "MAX_INSTRUCTIONS_CHARS", "chain_compact",
    "chain_request_compaction", "byte_guard_due", "chain_guard", "run_fit", "hook_before", "policy_options",
    "drop_retried_user_messages",
]

DUPLICATE_MIN_CHARS = 24  # shorter user messages ("next", "yes") repeat legitimately
DUPLICATE_WINDOW_SECONDS = 60
_SPACES_RE = re.compile(r"\s+")

Msg = dict[str, Any]


def _elapsed_ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)


def hook_before(state: ChainState, event: SummaryEvent, messages: list[Msg], tokens: int) -> None:
    send_hook(before_compaction, chain_id=state.chain.pk, trigger=event.trigger, event_id=event.pk,
              message_count=len(messages), token_count=tokens)


def _leaving(before: list[Msg], after: list[Msg]) -> list[Msg]:
    """Input messages that are no longer in the view verbatim."""
    return [m for m, gone in zip(before, records.fresh_mask(before, after)) if gone]


def _finish_compute(state: ChainState, step: RunStep, result: Any, before: list[Msg],
                    lineage: list[list[int]]) -> RunStep:
    """Shared tail of fit and compact: lineage, tokens, no-progress check, memory flush."""
    step.calls = int(getattr(result, "calls", 0) or 0)
    if getattr(result, "error", None):  # the engine failed closed (e.g. the strict identifier audit)
        step.outcome, step.reason = Outcome.FAILED, f"compaction failed: {result.error}"
        return step
    step.after = list(result.messages)
    result_lineage = getattr(result, "lineage", None)
    step.lineage = (records.compose_lineage(result_lineage, lineage) if result_lineage is not None
                    else records.align_lineage(step.after, before, lineage))
    step.tokens_after = records.view_tokens(step.after, model=state.model)
    if step.after == before:
        step.outcome, step.reason = Outcome.SKIPPED, "nothing to compact"
    elif step.tokens_after >= step.tokens_before and records.view_bytes(step.after) >= records.view_bytes(before):
        step.outcome, step.reason = Outcome.FAILED, "the compaction did not shrink the view; the view is unchanged"
    elif state.row.memory_flush:
        memory_flush(chain=state.chain, event=step.event, leaving=_leaving(before, step.after))
    return step


def _compute(state: ChainState, step: RunStep, before: list[Msg], lineage: list[list[int]],
             run: Callable[[Callable[[str], str]], Any]) -> RunStep:
    from flows.llm import summarize_callable_for
    from summarizer.compaction_errors import ContextTooLarge

    started = time.monotonic()
    summarize = summarize_callable_for(flow=state.chain.agent.flow, event=step.event, purpose="compaction")
    try:
        result = run(summarize)
    except ContextTooLarge as exc:
        step.outcome, step.reason = Outcome.FAILED, f"context too large: {exc}"
    except Exception as exc:  # an endpoint down or a failed audit: fail closed, keep the view, record why
        step.outcome, step.reason = Outcome.FAILED, f"compaction failed: {exc}"
    else:
        step = _finish_compute(state, step, result, before, lineage)
    step.duration_ms = _elapsed_ms(started)
    if step.outcome == Outcome.FAILED:
        step.after, step.lineage, step.tokens_after = before, lineage, step.tokens_before
    return step


def run_fit(state: ChainState, event: SummaryEvent, messages: list[Msg], lineage: list[list[int]], *,
            window_tokens: int, tokens_before: int, observed_tokens: int | None = None) -> RunStep:
    """Fit to the window (restore-profile re-summarization, window cut, tool-result truncation)."""
    from summarizer.compact import fit_to_window

    row = state.row
    step = RunStep(trigger=event.trigger, outcome=Outcome.OK, event=event, before=messages,
                   tokens_before=tokens_before)

    def run(summarize: Callable[[str], str]) -> Any:
        return fit_to_window(messages, window_tokens=window_tokens, summarize=summarize, model=state.model or None,
                             reserve_tokens=row.reserve_tokens, keep_recent_tokens=row.keep_recent_tokens,
                             force=event.trigger == Trigger.OVERFLOW, observed_tokens=observed_tokens,
                             **policy_options(row))

    step = _compute(state, step, messages, lineage, run)
    if step.outcome == Outcome.SKIPPED:
        step.reason = "already fits the window" if observed_tokens is None else "nothing left to compact"
    return step


def policy_options(row: Any) -> dict[str, Any]:
    """Identifier policy and compaction provider of a settings row, as the engine's keyword arguments."""
    return {"identifier_policy": row.identifier_policy, "identifier_instructions": row.identifier_instructions,
            "provider": row.compaction_provider or None}


def _compact_step(state: ChainState, event: SummaryEvent, instructions: str) -> RunStep:
    from flows.services.views import window_for
    from summarizer.compact import compact_now

    before, lineage, row = state.messages, state.lineage, state.row
    tokens = records.view_tokens(before, model=state.model)
    step = RunStep(trigger=event.trigger, outcome=Outcome.OK, event=event, before=before, tokens_before=tokens)
    if not before:
        step.outcome, step.reason = Outcome.SKIPPED, "nothing to compact: the chain is empty"
        return step
    hook_before(state, event, before, tokens)
    window = window_for(flow=state.chain.agent.flow, row=row)

    def run(summarize: Callable[[str], str]) -> Any:
        # keep_recent_tokens 0 makes compact_now a hard checkpoint: the view continues from the summary only
        return compact_now(before, summarize=summarize, instructions=instructions[:MAX_INSTRUCTIONS_CHARS] or None,
                           keep_recent_tokens=row.keep_recent_tokens, model=state.model or None,
                           window_tokens=window[0] if window else None, **policy_options(row))

    return _compute(state, step, before, lineage, run)


# ----------------------------------------------------------------------------------------------- manual

def chain_request_compaction(*, chain: Chain, instructions: str = "", user: Any = None) -> SummaryEvent:
    """Record a RUNNING manual compaction and queue it after commit (the API and the page call this).

    `user` is accepted for the callers' convenience; who asked is not stored (SummaryEvent has no such field).
    """
    from flows import tasks
    from flows.settings_registry import settings_for, settings_values

    row = settings_for(profile=chain.agent.profile, flow=chain.agent.flow)
    with transaction.atomic():
        event = event_start(chain=chain, trigger=Trigger.MANUAL, snapshot=settings_values(row),
                            notify=row.notify_user, instructions=(instructions or "")[:MAX_INSTRUCTIONS_CHARS])
        transaction.on_commit(lambda: tasks.compact_chain_task.delay(chain.pk, event.pk))
    return event


def chain_compact(*, chain_id: int, instructions: str = "", event_id: int | None = None) -> SummaryEvent:
    """Compact now (manual): summary + kept tail, or a hard checkpoint when keep_recent_tokens is 0."""
    return _compaction(chain_id=chain_id, trigger=Trigger.MANUAL, instructions=instructions, event_id=event_id)


def _compaction(*, chain_id: int, trigger: str, instructions: str = "", event_id: int | None = None,
                state: ChainState | None = None, keep_new_raw_on_failure: bool = True) -> SummaryEvent:
    """Run one compaction to completion; `keep_new_raw_on_failure` writes the unsummarized new messages
    into a view when the compaction fails (off for the byte guard: the turn's summarization follows)."""
    from flows.settings_registry import settings_values

    event = SummaryEvent.objects.filter(pk=event_id, chain_id=chain_id).first() if event_id else None
    if event is not None and event.outcome != Outcome.RUNNING:
        return event  # a re-delivered task: this compaction already finished
    for _attempt in range(MAX_SAVE_ATTEMPTS):
        state = state or load_state(chain_id)
        snapshot = settings_values(state.row)
        event = event or event_start(chain=state.chain, trigger=trigger, snapshot=snapshot,
                                     notify=state.row.notify_user, instructions=instructions)
        step = _compact_step(state, event, instructions)
        ok = step.outcome == Outcome.OK
        if ok and state.row.truncate_after_compaction and state.chain.is_active:
            saved = _save_with_successor(state, step, snapshot)
        else:
            saved = save_view(state, messages=step.after if ok else state.messages,
                              lineage=step.lineage if ok else state.lineage, steps=[step], snapshot=snapshot,
                              notify=state.row.notify_user,
                              write_view=ok or (keep_new_raw_on_failure and bool(state.new_raw)))
        if saved is not None:
            return saved[0]
        state = None
    return fail_event(event, "superseded: the view kept changing during the compaction")


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
    from summarizer.messages import content_text

    return _SPACES_RE.sub(" ", content_text(message)).strip()


def drop_retried_user_messages(messages: list[Msg], times: list[datetime | None]) -> list[int]:
    """Indices to keep: a long user message repeated (same sender, same text after whitespace normalisation)
    within DUPLICATE_WINDOW_SECONDS of the previous copy, with no assistant message between, is a retry."""
    keep, seen = [], {}
    for index, (message, at) in enumerate(zip(messages, times)):
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
    seqs = {lin[0] for lin, new in zip(step.lineage, fresh) if not new and len(lin) == 1}
    created = dict(Message.objects.filter(chain=state.chain, seq__in=seqs).values_list("seq", "created_at"))
    return [created.get(lin[0]) if not new and len(lin) == 1 else None for lin, new in zip(step.lineage, fresh)]


def _save_with_successor(state: ChainState, step: RunStep, snapshot: dict[str, Any]) -> list[SummaryEvent] | None:
    """Archive the chain unchanged and continue in a successor seeded with the compacted view."""
    from flows.services.history import chain_append

    keep = drop_retried_user_messages(step.after, _times_of(state, step))
    seeded = [step.after[i] for i in keep]
    with transaction.atomic():
        chain = Chain.objects.select_for_update().get(pk=state.chain.pk)
        if chain.view_version != state.base_version or not chain.is_active:
            return None
        compactions = chain.compactions + 1
        Chain.objects.filter(pk=chain.pk).update(is_active=False, compactions=compactions,
                                                 updated_at=timezone.now())
        successor = Chain.objects.create(agent_id=chain.agent_id, parent=chain, compactions=compactions,
                                         tool_call_id_template=chain.tool_call_id_template)
        chain_append(chain=successor, messages=seeded)
        successor.view_version = 0
        view = create_view(successor, seeded, [[i + 1] for i in range(len(seeded))], raw_seq_to=len(seeded),
                            snapshot=snapshot, model=state.model or None)
        Chain.objects.filter(pk=successor.pk).update(view_version=view.version)
        step.reason = f"continued in successor chain #{successor.pk}"
        event = event_finish(step, chain=chain, snapshot=snapshot, raw_seq_to=state.raw_seq_to, view=view)
        notify, hooks = state.row.notify_user, [hook_after_payload(step, event)]
        transaction.on_commit(lambda: after_save(chain.pk, None, [event], compactions, notify, hooks), robust=True)
        transaction.on_commit(lambda: after_save(successor.pk, view, [], compactions, False, []), robust=True)
    return [event]
