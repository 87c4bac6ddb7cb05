"""Writes of the model's view: summarize after a turn, fit to the window, preview settings (nothing saved).

Theory of operation. The raw chain is append-only; the view is PentAGI's summarized chain. A run reads the
newest view and the raw messages newer than it, feeds *view + new raw* to the engine (lineage in raw seqs),
then fits the result to the model's window when the window is known. Everything slow happens outside any
transaction; the save is one short transaction that re-checks `chain.view_version` under a row lock, so a
run whose base view went stale never overwrites the newer one: it starts over from the newer view (at most
MAX_SAVE_ATTEMPTS times). A failed summarizer still gets the new raw messages into a new view, unsummarized
(the model must always see them), and the failure is recorded on the event.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from flows.events import broadcast
from flows.models import Chain, ChainView, Message, Outcome, Section, SummarizerSettings, SummaryEvent, Trigger
from flows.services import view_records as records

__all__ = [
    "MAX_SAVE_ATTEMPTS", "ChainState", "RunStep", "chain_summarize", "chain_fit", "view_current", "load_state",
    "save_view", "event_start", "event_finish", "fail_event", "window_for", "hook_after_payload",
    "chain_compact", "chain_request_compaction", "chain_preview", "create_view", "after_save",
]

log = logging.getLogger(__name__)

MAX_SAVE_ATTEMPTS = 3
COMPACTION_TRIGGERS = {Trigger.WINDOW, Trigger.OVERFLOW, Trigger.MANUAL, Trigger.BYTE_GUARD}

Message_ = dict[str, Any]


@dataclass
class ChainState:
    """What a run starts from: the newest view plus the raw messages appended after it."""

    chain: Chain
    row: SummarizerSettings
    base_version: int
    view_messages: list[Message_]
    view_lineage: list[list[int]]
    new_raw: list[Message]
    raw_seq_to: int

    @property
    def model(self) -> str:
        return self.chain.agent.flow.model_name

    @property
    def messages(self) -> list[Message_]:
        return self.view_messages + [m.to_dict() for m in self.new_raw]

    @property
    def lineage(self) -> list[list[int]]:
        return self.view_lineage + [[m.seq] for m in self.new_raw]


@dataclass
class RunStep:
    """One recorded operation of a run (becomes a SummaryEvent)."""

    trigger: str
    outcome: str
    event: SummaryEvent | None = None
    reason: str = ""
    before: list[Message_] = field(default_factory=list)
    after: list[Message_] = field(default_factory=list)
    lineage: list[list[int]] = field(default_factory=list)
    calls: int = 0
    duration_ms: int = 0
    tokens_before: int = 0
    tokens_after: int = 0


def load_state(chain_id: int) -> ChainState:
    from flows.settings_registry import settings_for

    chain = Chain.objects.select_related("agent__flow").get(pk=chain_id)
    view = ChainView.objects.filter(chain_id=chain_id).order_by("-version").first()
    raw_seq_to = view.raw_seq_to if view else 0
    new_raw = list(Message.objects.filter(chain_id=chain_id, seq__gt=raw_seq_to).order_by("seq"))
    row = settings_for(profile=chain.agent.profile, flow=chain.agent.flow)
    return ChainState(
        chain=chain, row=row, base_version=view.version if view else 0,
        view_messages=list(view.messages) if view else [], view_lineage=list(view.lineage) if view else [],
        new_raw=new_raw, raw_seq_to=new_raw[-1].seq if new_raw else raw_seq_to)


def view_current(*, chain: Chain) -> ChainView | None:
    return ChainView.objects.filter(chain=chain).order_by("-version").first()


def window_for(*, flow: Any, row: SummarizerSettings) -> tuple[int, int] | None:
    """(window tokens, reserve tokens) of the flow's model, or None when the window is unknown (step skipped)."""
    from flows.providers import model_window_for

    from summarizer.compact import effective_reserve

    window, max_output, _source = model_window_for(flow=flow)
    if not window:
        return None
    return window, effective_reserve(window, row.reserve_tokens, flow.model_name or None,
                                     max_output_tokens=max_output)


def _elapsed_ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)


# ----------------------------------------------------------------------------------------------- events

def event_start(*, chain: Chain, trigger: str, snapshot: dict[str, Any], notify: bool,
                instructions: str = "") -> SummaryEvent:
    """A RUNNING event (so LLM calls can point at it); compactions announce themselves to the live view."""
    event = SummaryEvent.objects.create(chain=chain, trigger=trigger, outcome=Outcome.RUNNING,
                                        instructions=instructions, settings_snapshot=snapshot,
                                        model=chain.agent.flow.model_name)
    if trigger in COMPACTION_TRIGGERS and notify:
        transaction.on_commit(lambda: broadcast(chain.pk, {
            "type": "compaction.started", "chain_id": chain.pk, "event_id": event.pk, "trigger": trigger}))
    return event


def _announce(event: SummaryEvent, compactions: int) -> None:
    if event.outcome == Outcome.FAILED:
        broadcast(event.chain_id, {"type": "compaction.failed", "chain_id": event.chain_id, "event_id": event.pk,
                                   "trigger": event.trigger, "reason": event.reason})
    elif event.outcome == Outcome.OK:
        broadcast(event.chain_id, {
            "type": "compaction.completed", "chain_id": event.chain_id, "event_id": event.pk,
            "trigger": event.trigger, "bytes_before": event.bytes_before, "bytes_after": event.bytes_after,
            "tokens_before": event.tokens_before, "tokens_after": event.tokens_after, "calls": event.calls,
            "duration_ms": event.duration_ms, "compactions": compactions})


def event_finish(step: RunStep, *, chain: Chain, snapshot: dict[str, Any], raw_seq_to: int,
                 view: ChainView | None) -> SummaryEvent:
    """Fill in the event of a step (creating it when the step had none)."""
    event = step.event or SummaryEvent(chain=chain, trigger=step.trigger, settings_snapshot=snapshot,
                                       model=chain.agent.flow.model_name)
    mask = records.fresh_mask(step.after, step.before) if step.after else []
    event.outcome, event.reason = step.outcome, step.reason[:2000]
    event.bytes_before = records.view_bytes(step.before) if step.before else 0
    event.bytes_after = records.view_bytes(step.after) if step.after else event.bytes_before
    event.tokens_before, event.tokens_after = step.tokens_before, step.tokens_after or step.tokens_before
    event.calls, event.duration_ms = step.calls, step.duration_ms
    event.covered = records.covered_ranges(step.lineage, mask) if step.outcome == Outcome.OK else []
    event.summary_text = records.summary_text(step.after, mask) if step.outcome == Outcome.OK else ""
    event.raw_seq_to, event.view, event.finished_at = raw_seq_to, view, timezone.now()
    event.save()
    return event


def fail_event(event: SummaryEvent, reason: str) -> SummaryEvent:
    """Close an event whose run could not save (stale base, vanished chain); its view stays as it was."""
    SummaryEvent.objects.filter(pk=event.pk, outcome=Outcome.RUNNING).update(
        outcome=Outcome.SKIPPED if "superseded" in reason else Outcome.FAILED, reason=reason[:2000],
        finished_at=timezone.now())
    event.refresh_from_db()
    return event


# ----------------------------------------------------------------------------------------------- saving

def save_view(state: ChainState, *, messages: list[Message_], lineage: list[list[int]], steps: list[RunStep],
              snapshot: dict[str, Any], notify: bool, write_view: bool = True) -> list[SummaryEvent] | None:
    """One transaction: new view version + sections + the steps' events. None when the base went stale."""
    model = state.model or None
    with transaction.atomic():
        chain = Chain.objects.select_for_update().get(pk=state.chain.pk)
        if chain.view_version != state.base_version:
            return None
        view = None
        if write_view:
            view = create_view(chain, messages, lineage, raw_seq_to=state.raw_seq_to, snapshot=snapshot,
                                model=model)
        compacted = sum(1 for s in steps if s.trigger in COMPACTION_TRIGGERS and s.outcome == Outcome.OK)
        if write_view or compacted:
            Chain.objects.filter(pk=chain.pk).update(
                view_version=view.version if view else chain.view_version,
                compactions=F("compactions") + compacted, updated_at=timezone.now())
        events = [event_finish(s, chain=chain, snapshot=snapshot, raw_seq_to=state.raw_seq_to, view=view)
                  for s in steps]
        _close_interrupted(chain, keep={e.pk for e in events})
        count = chain.compactions + compacted
        hooks = [hook_after_payload(s, e) for s, e in zip(steps, events) if s.trigger in COMPACTION_TRIGGERS]
        transaction.on_commit(lambda: after_save(chain.pk, view, events, count, notify, hooks), robust=True)
    return events


def create_view(chain: Chain, messages: list[Message_], lineage: list[list[int]], *, raw_seq_to: int,
                 snapshot: dict[str, Any], model: str | None) -> ChainView:
    view = ChainView.objects.create(
        chain=chain, version=chain.view_version + 1, messages=messages, lineage=lineage,
        raw_seq_from=min((s for lin in lineage for s in lin), default=0), raw_seq_to=raw_seq_to,
        byte_size=records.view_bytes(messages), token_count=records.view_tokens(messages, model=model),
        settings_snapshot=snapshot)
    Section.objects.bulk_create([
        Section(view=view, index=rec["index"], header=rec["header"], pairs=rec["pairs"], byte_size=rec["byte_size"])
        for rec in records.section_records(messages, lineage)])
    return view


def _close_interrupted(chain: Chain, *, keep: set[int]) -> None:
    """RUNNING turn events left by a worker that died (or lost a race) are closed: a newer view exists now."""
    SummaryEvent.objects.filter(chain=chain, outcome=Outcome.RUNNING, trigger=Trigger.TURN).exclude(
        pk__in=keep).update(outcome=Outcome.SKIPPED, reason="superseded: interrupted or raced by another run",
                            finished_at=timezone.now())


def hook_after_payload(step: RunStep, event: SummaryEvent) -> dict[str, Any]:
    """after_compaction arguments: the view after, and how many input messages left it."""
    left = sum(records.fresh_mask(step.before, step.after)) if step.outcome == Outcome.OK else 0
    return {"chain_id": event.chain_id, "trigger": event.trigger, "event_id": event.pk, "outcome": event.outcome,
            "message_count": len(step.after), "token_count": event.tokens_after, "compacted_count": left}


def after_save(chain_id: int, view: ChainView | None, events: list[SummaryEvent], compactions: int,
                notify: bool, hooks: list[dict[str, Any]]) -> None:
    from flows.signals import after_compaction, send_hook

    for payload in hooks:
        send_hook(after_compaction, **payload)
    if view is not None:
        broadcast(chain_id, {"type": "view.updated", "chain_id": chain_id, "version": view.version,
                             "raw_seq_to": view.raw_seq_to, "byte_size": view.byte_size,
                             "token_count": view.token_count, "messages": len(view.messages)})
    if notify:
        for event in events:
            if event.trigger in COMPACTION_TRIGGERS:
                _announce(event, compactions)


# ----------------------------------------------------------------------------------------------- summarize

def _summarize_step(state: ChainState, event: SummaryEvent) -> RunStep:
    from flows.llm import summarize_callable_for
    from flows.settings_registry import summarizer_config_for
    from summarizer.summarize import summarize_chain

    started, before = time.monotonic(), state.messages
    result = summarize_chain(before, summarizer_config_for(state.row),
                             summarize_callable_for(flow=state.chain.agent.flow, event=event),
                             id_template=state.chain.tool_call_id_template or None, lineage_in=state.lineage)
    tokens_before = records.view_tokens(before, model=state.model)
    step = RunStep(trigger=event.trigger, outcome=Outcome.OK, event=event, before=before, calls=result.calls,
                   duration_ms=_elapsed_ms(started), tokens_before=tokens_before)
    if result.error:
        step.outcome, step.reason = Outcome.FAILED, f"summarizer error: {result.error}"
        step.after, step.lineage, step.tokens_after = before, state.lineage, tokens_before
        return step
    step.after, step.lineage = result.messages, [list(x) for x in result.lineage]
    step.tokens_after = records.view_tokens(step.after, model=state.model)
    if result.calls == 0:
        step.outcome, step.reason = Outcome.SKIPPED, "within the summarizer's byte budgets: nothing summarized"
    return step


def fit_step(state: ChainState, messages: list[Message_], lineage: list[list[int]], *, trigger: str,
             snapshot: dict[str, Any], force: bool = False, observed_tokens: int | None = None) -> RunStep | None:
    """Fit `messages` to the model's window; None when the window is unknown or it already fits."""
    from flows.services.compaction import hook_before, run_fit

    window = window_for(flow=state.chain.agent.flow, row=state.row)
    if window is None or not state.row.compaction_enabled:
        return None
    window_tokens, reserve = window
    tokens = observed_tokens or records.view_tokens(messages, model=state.model)
    if not force and tokens + reserve <= window_tokens:
        return None
    event = event_start(chain=state.chain, trigger=trigger, snapshot=snapshot, notify=state.row.notify_user)
    hook_before(state, event, messages, tokens)
    return run_fit(state, event, messages, lineage, window_tokens=window_tokens, tokens_before=tokens,
                   observed_tokens=observed_tokens)


def chain_summarize(*, chain_id: int, trigger: str = Trigger.TURN) -> SummaryEvent | None:
    """Summarize the view after a turn (then fit it to the window). None when there was nothing new."""
    from flows.services.compaction import byte_guard_due, chain_guard
    from flows.settings_registry import settings_values

    event = None
    for _attempt in range(MAX_SAVE_ATTEMPTS):
        state = load_state(chain_id)
        if byte_guard_due(state):
            guard = chain_guard(state=state)
            if guard.outcome == Outcome.OK:
                return guard
            state = load_state(chain_id)  # failed guard recorded; the turn is still summarized as usual
        if not state.new_raw and trigger == Trigger.TURN:
            return fail_event(event, "superseded: a newer view already holds these messages") if event else None
        snapshot = settings_values(state.row)
        event = event or event_start(chain=state.chain, trigger=trigger, snapshot=snapshot, notify=False)
        steps = [_summarize_step(state, event)]
        view, lineage = steps[0].after, steps[0].lineage
        if steps[0].outcome != Outcome.FAILED:
            fit = fit_step(state, view, lineage, trigger=Trigger.WINDOW, snapshot=snapshot)
            if fit is not None:
                steps.append(fit)
                if fit.outcome == Outcome.OK:
                    view, lineage = fit.after, fit.lineage
        saved = save_view(state, messages=view, lineage=lineage, steps=steps, snapshot=snapshot,
                          notify=state.row.notify_user)
        if saved is not None:
            return saved[0]
        for step in steps[1:]:
            fail_event(step.event, "superseded: a newer view was saved meanwhile")
    return fail_event(event, "superseded: the view kept changing; the next turn will retry") if event else None


def chain_fit(*, chain_id: int, trigger: str = Trigger.WINDOW,
              observed_tokens: int | None = None) -> SummaryEvent | None:
    """Fit the current view to the window (on demand, or forced after a context-overflow error)."""
    from flows.settings_registry import settings_values

    for _attempt in range(MAX_SAVE_ATTEMPTS):
        state = load_state(chain_id)
        snapshot = settings_values(state.row)
        forced = trigger == Trigger.OVERFLOW
        step = fit_step(state, state.messages, state.lineage, trigger=trigger, snapshot=snapshot, force=forced,
                        observed_tokens=observed_tokens)
        if step is None:
            if not state.new_raw:
                return None
            step = RunStep(trigger=trigger, outcome=Outcome.SKIPPED, reason="fits the window (or window unknown)",
                           before=state.messages, after=state.messages, lineage=state.lineage)
        ok = step.outcome == Outcome.OK
        saved = save_view(state, messages=step.after if ok else state.messages,
                          lineage=step.lineage if ok else state.lineage, steps=[step], snapshot=snapshot,
                          notify=state.row.notify_user, write_view=ok or bool(state.new_raw))
        if saved is not None:
            return saved[0]
        if step.event is not None:
            fail_event(step.event, "superseded: a newer view was saved meanwhile")
    return None


def chain_compact(*, chain_id: int, instructions: str = "", event_id: int | None = None) -> SummaryEvent:
    """Compact now (runs in the caller; the API should queue it with `chain_request_compaction`)."""
    from flows.services.compaction import chain_compact as compact

    return compact(chain_id=chain_id, instructions=instructions, event_id=event_id)


def chain_request_compaction(*, chain: Chain, instructions: str = "", user: Any = None) -> SummaryEvent:
    """Create the RUNNING manual compaction event and queue `compact_chain_task` on commit."""
    from flows.services.compaction import chain_request_compaction as request

    return request(chain=chain, instructions=instructions, user=user)


def chain_preview(*, chain: Chain, settings: dict[str, Any]) -> dict[str, Any]:
    """The view `settings` would give on the chain's raw messages (extractive summarizer; nothing saved)."""
    from flows.services.preview import chain_preview as preview

    return preview(chain=chain, settings=settings)
