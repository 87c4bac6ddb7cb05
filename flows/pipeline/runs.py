"""The run machinery every write of the model's view shares: load the state, record events, save the view.

Theory of operation. The raw chain is append-only; the view is PentAGI's summarized chain. A run (a
summarization, a window fit or a compaction, in the modules above this one) reads the newest view and the raw
messages newer than it (`load_state`), feeds *view + new raw* to the engine (lineage in raw seqs), and saves
the result with `view_save`. Everything slow happens outside any transaction; the save is one short
transaction that re-checks `chain.view_version` under a row lock, so a run whose base view went stale never
overwrites the newer one: it starts over from the newer view (at most MAX_SAVE_ATTEMPTS times). A failed
summarizer still gets the new raw messages into a new view, unsummarized (the model must always see them),
and the failure is recorded on the event. A tool round still waiting for its results stays out of every
run (`ChainState.pending_raw`): folded into a view, the engine would repair it with stand-in results (or
summarize the call away), and the real results arriving next would then answer a call the view no longer
holds open. After commit the page hears `view.updated` and, for compactions,
the hooks and `compaction.*` events run.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from flows.config import model_window_for, provider_for, settings_for
from flows.core import broadcast
from flows.engine import effective_reserve, retention_of
from flows.models import (
    Chain,
    ChainView,
    Flow,
    GatewayCall,
    Message,
    Outcome,
    ProviderConfig,
    SummarizerSettings,
    SummaryEvent,
    Trigger,
    ViewSection,
)
from flows.pipeline import view_records as records
from flows.pipeline.hooks import after_compaction, send_hook
from flows.pipeline.request_budget import RequestNeeds

__all__ = [
    "MAX_SAVE_ATTEMPTS", "COMPACTION_TRIGGERS", "ChainState", "RunStep", "open_round_start", "load_state",
    "view_current", "window_for", "window_info", "serving_route", "elapsed_ms", "event_start", "event_claim",
    "event_finish", "event_fail", "step_outcome", "view_save", "view_create", "view_measures", "ViewMeasures",
    "hook_after_payload", "on_view_saved",
]

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
    pending_raw: list[Message] = field(default_factory=list)  # an open tool round at the end: sent, never folded

    @property
    def model(self) -> str:
        return self.chain.agent.flow.model_name

    @property
    def messages(self) -> list[Message_]:
        return self.view_messages + [m.to_dict() for m in self.new_raw]

    @property
    def lineage(self) -> list[list[int]]:
        return self.view_lineage + [[m.seq] for m in self.new_raw]

    @property
    def sendable(self) -> list[Message_]:
        """What the model gets: the view, the settled raw messages and the open tool round after them."""
        return self.messages + [m.to_dict() for m in self.pending_raw]

    @property
    def sendable_seq_to(self) -> int:
        return self.pending_raw[-1].seq if self.pending_raw else self.raw_seq_to


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
    stood_in: str = ""  # on a gateway call: which model failed and that the offline summarizer stood in

    @property
    def full_reason(self) -> str:
        return "; ".join(part for part in (self.reason, self.stood_in) if part)


def open_round_start(rows: list[Message]) -> int:
    """Index in `rows` where a tool round still waiting for results begins (len(rows) when there is none).

    Open means: the last non-tool message is an assistant message with calls, and not all of them are answered
    yet (a user message after the calls closes the round for good: PentAGI answers them itself)."""
    for index in range(len(rows) - 1, -1, -1):
        row = rows[index]
        if row.role == "tool":
            continue
        if row.role != "assistant" or not row.tool_calls:
            return len(rows)
        calls = {call.get("id") for call in row.tool_calls}
        answered = {later.tool_call_id for later in rows[index + 1:]}
        return len(rows) if calls <= answered else index
    return len(rows)


def load_state(chain_id: int) -> ChainState:
    chain = Chain.objects.select_related("agent__flow").get(pk=chain_id)
    view = ChainView.objects.filter(chain_id=chain_id).order_by("-version").first()
    raw_seq_to = view.raw_seq_to if view else 0
    raw = list(Message.objects.filter(chain_id=chain_id, seq__gt=raw_seq_to).order_by("seq"))
    cut = open_round_start(raw)
    new_raw, pending = raw[:cut], raw[cut:]
    row = settings_for(profile=chain.agent.profile, flow=chain.agent.flow)
    return ChainState(
        chain=chain, row=row, base_version=view.version if view else 0,
        view_messages=list(view.messages) if view else [], view_lineage=list(view.lineage) if view else [],
        new_raw=new_raw, raw_seq_to=new_raw[-1].seq if new_raw else raw_seq_to, pending_raw=pending)


def view_current(*, chain: Chain) -> ChainView | None:
    return ChainView.objects.filter(chain=chain).order_by("-version").first()


def window_for(*, flow: Flow, row: SummarizerSettings, chain_id: int | None = None,
               needs: RequestNeeds | None = None) -> tuple[int, int] | None:
    """(window tokens, reserve tokens) of the model serving the chain (`window_info`), or None when the window
    is unknown (step skipped)."""
    info = window_info(flow=flow, row=row, chain_id=chain_id, needs=needs)
    return None if info is None else (info[0], info[1])


def window_info(*, flow: Flow, row: SummarizerSettings, chain_id: int | None = None,
                needs: RequestNeeds | None = None) -> tuple[int, int, str] | None:
    """(window tokens, reserve tokens, where the window came from) of the model serving the chain, or None
    when unknown: the model a gateway request is routed to (`needs`), else that of the chain's newest gateway
    call, else the flow's model on the flow's provider."""
    provider, model = serving_route(chain_id, needs)
    window, max_output, source = model_window_for(flow=flow, provider=provider, model=model or None)
    if not window:
        return None
    return window, effective_reserve(window, row.reserve_tokens, model or flow.model_name or None,
                                     max_output_tokens=max_output), source


def serving_route(chain_id: int | None, needs: RequestNeeds | None = None) -> tuple[ProviderConfig | None, str]:
    """(provider, model) a chain's calls are served by, as far as a request or the chain's calls say."""
    if needs is not None and needs.model:
        return (provider_for(name=needs.provider) if needs.provider else None), needs.model
    if chain_id is None:
        return None, ""
    last = GatewayCall.objects.filter(chain_id=chain_id).order_by("-pk").values_list("provider__name", "model").first()
    if last is None or not last[1]:
        return None, ""
    return (provider_for(name=last[0]) if last[0] else None), last[1]


def elapsed_ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)


# ----------------------------------------------------------------------------------------------- events

def event_start(*, chain: Chain, trigger: str, snapshot: dict[str, Any], notify: bool,
                instructions: str = "", raw_seq_to: int = 0) -> SummaryEvent:
    """A RUNNING event (so LLM calls can point at it); compactions announce themselves to the live view.
    `raw_seq_to`: the state it works on, known at the start (see `event_claim`)."""
    event = SummaryEvent.objects.create(chain=chain, trigger=trigger, outcome=Outcome.RUNNING,
                                        instructions=instructions, settings_snapshot=snapshot,
                                        model=chain.agent.flow.model_name, raw_seq_to=raw_seq_to)
    if trigger in COMPACTION_TRIGGERS and notify:
        transaction.on_commit(lambda: broadcast(chain.pk, {
            "type": "compaction.started", "chain_id": chain.pk, "event_id": event.pk, "trigger": trigger}))
    return event


def event_claim(state: ChainState, *, snapshot: dict[str, Any], lease_seconds: float | None) -> SummaryEvent | None:
    """The RUNNING turn event of a run of `state`, or None when another run already works on that same state
    (a RUNNING turn event with the same `raw_seq_to`, younger than `lease_seconds`; None: no expiry): a chain
    queued twice, or a task re-delivered after a crash, then calls no model. Counted on the chain as skipped."""
    with transaction.atomic():
        Chain.objects.select_for_update().filter(pk=state.chain.pk).first()  # claims on one chain queue up here
        holders = SummaryEvent.objects.filter(chain_id=state.chain.pk, trigger=Trigger.TURN, outcome=Outcome.RUNNING,
                                              raw_seq_to=state.raw_seq_to)
        if lease_seconds is not None:
            holders = holders.filter(created_at__gt=timezone.now() - timedelta(seconds=lease_seconds))
        if holders.exists():
            Chain.objects.filter(pk=state.chain.pk).update(skipped_runs=F("skipped_runs") + 1)
            return None
        return event_start(chain=state.chain, trigger=Trigger.TURN, snapshot=snapshot, notify=False,
                           raw_seq_to=state.raw_seq_to)


def _announce(event: SummaryEvent, compactions: int) -> None:
    if event.outcome == Outcome.FAILED:
        broadcast(event.chain_id, {"type": "compaction.failed", "chain_id": event.chain_id, "event_id": event.pk,
                                   "trigger": event.trigger, "reason": event.reason})
    elif event.outcome == Outcome.SKIPPED:
        broadcast(event.chain_id, {"type": "compaction.skipped", "chain_id": event.chain_id, "event_id": event.pk,
                                   "trigger": event.trigger, "reason": event.reason})
    elif event.outcome == Outcome.OK:
        broadcast(event.chain_id, {
            "type": "compaction.completed", "chain_id": event.chain_id, "event_id": event.pk,
            "trigger": event.trigger, "bytes_before": event.bytes_before, "bytes_after": event.bytes_after,
            "tokens_before": event.tokens_before, "tokens_after": event.tokens_after, "calls": event.calls,
            "duration_ms": event.duration_ms, "compactions": compactions})


def _retention(step: RunStep) -> dict[str, Any] | None:
    """What the new view kept of the replaced messages' findings and identifiers (None: nothing replaced)."""
    replaced = [m for m, gone in zip(step.before, records.fresh_mask(step.before, step.after), strict=False) if gone]
    return retention_of(replaced, step.after).as_dict() if replaced else None


def step_outcome(step: RunStep) -> dict[str, Any]:
    """The event fields a step's result decides (sizes, covered ranges, summary text, what the new view kept):
    pure, so `view_save` works them out before it takes the chain's row lock."""
    ok = step.outcome == Outcome.OK
    mask = records.fresh_mask(step.after, step.before) if step.after else []
    bytes_before = records.view_bytes(step.before) if step.before else 0
    return {
        "outcome": step.outcome, "reason": step.full_reason[:2000], "bytes_before": bytes_before,
        "bytes_after": records.view_bytes(step.after) if step.after else bytes_before,
        "tokens_before": step.tokens_before, "tokens_after": step.tokens_after or step.tokens_before,
        "calls": step.calls, "duration_ms": step.duration_ms,
        "covered": records.covered_ranges(step.lineage, mask) if ok else [],
        "summary_text": records.summary_text(step.after, mask) if ok else "",
        "retention": _retention(step) if ok else None,
    }


def event_finish(step: RunStep, *, chain: Chain, snapshot: dict[str, Any], raw_seq_to: int,
                 view: ChainView | None, outcome: dict[str, Any] | None = None) -> SummaryEvent:
    """Fill in the event of a step (creating it when the step had none); `outcome`: its `step_outcome`, when
    the caller worked it out already."""
    event = step.event or SummaryEvent(chain=chain, trigger=step.trigger, settings_snapshot=snapshot,
                                       model=chain.agent.flow.model_name)
    for name, value in (outcome if outcome is not None else step_outcome(step)).items():
        setattr(event, name, value)
    event.raw_seq_to, event.view, event.finished_at = raw_seq_to, view, timezone.now()
    event.save()
    return event


def event_fail(event: SummaryEvent, reason: str) -> SummaryEvent:
    """Close an event whose run could not save (stale base, vanished chain); its view stays as it was.
    A superseded after-turn run that called no model is counted on the chain instead (`is_idle_run`)."""
    SummaryEvent.objects.filter(pk=event.pk, outcome=Outcome.RUNNING).update(
        outcome=Outcome.SKIPPED if "superseded" in reason else Outcome.FAILED, reason=reason[:2000],
        finished_at=timezone.now())
    event.refresh_from_db()
    if is_idle_run(event):
        with transaction.atomic():
            if SummaryEvent.objects.filter(pk=event.pk).delete()[0]:
                Chain.objects.filter(pk=event.chain_id).update(skipped_runs=F("skipped_runs") + 1)
    return event


# ----------------------------------------------------------------------------------------------- saving

def view_save(state: ChainState, *, messages: list[Message_], lineage: list[list[int]], steps: list[RunStep],
              snapshot: dict[str, Any], notify: bool, write_view: bool = True) -> list[SummaryEvent] | None:
    """One transaction: new view version + sections + the steps' events. None when the base went stale.
    What the rows record about the view and the steps is worked out first: the chain's row lock, which every
    append to the chain waits for, is held for the writes only."""
    model = state.model or None
    measures = view_measures(messages, lineage, model=model) if write_view else None
    outcomes = [step_outcome(s) for s in steps]
    with transaction.atomic():
        chain = Chain.objects.select_for_update().get(pk=state.chain.pk)
        if chain.view_version != state.base_version:
            return None
        view = None
        if write_view:
            view = view_create(chain, messages, lineage, raw_seq_to=state.raw_seq_to, snapshot=snapshot,
                               model=model, measures=measures)
        compacted = sum(1 for s in steps if s.trigger in COMPACTION_TRIGGERS and s.outcome == Outcome.OK)
        if write_view or compacted:
            Chain.objects.filter(pk=chain.pk).update(
                view_version=view.version if view else chain.view_version,
                compactions=F("compactions") + compacted, updated_at=timezone.now())
        events = [event_finish(s, chain=chain, snapshot=snapshot, raw_seq_to=state.raw_seq_to, view=view, outcome=o)
                  for s, o in zip(steps, outcomes, strict=True)]
        _close_interrupted(chain, keep={e.pk for e in events})
        _count_idle(chain, events)
        count = chain.compactions + compacted
        hooks = [hook_after_payload(s, e) for s, e in zip(steps, events, strict=False)
                 if s.trigger in COMPACTION_TRIGGERS]
        transaction.on_commit(lambda: on_view_saved(chain.pk, view, events, count, notify, hooks), robust=True)
    return events


@dataclass(frozen=True)
class ViewMeasures:
    """What a new view's rows record about its messages: sizes and sections (`view_measures`)."""
    byte_size: int
    token_count: int
    sections: list[dict[str, Any]]


def view_measures(messages: list[Message_], lineage: list[list[int]], *, model: str | None) -> ViewMeasures:
    return ViewMeasures(byte_size=records.view_bytes(messages), token_count=records.view_tokens(messages, model=model),
                        sections=records.section_records(messages, lineage))


def view_create(chain: Chain, messages: list[Message_], lineage: list[list[int]], *, raw_seq_to: int,
                snapshot: dict[str, Any], model: str | None, measures: ViewMeasures | None = None) -> ChainView:
    measured = measures if measures is not None else view_measures(messages, lineage, model=model)
    view = ChainView.objects.create(
        chain=chain, version=chain.view_version + 1, messages=messages, lineage=lineage,
        raw_seq_from=min((s for lin in lineage for s in lin), default=0), raw_seq_to=raw_seq_to,
        byte_size=measured.byte_size, token_count=measured.token_count, settings_snapshot=snapshot)
    ViewSection.objects.bulk_create([
        ViewSection(view=view, index=rec["index"], header=rec["header"], pairs=rec["pairs"],
                    byte_size=rec["byte_size"])
        for rec in measured.sections])
    return view


def is_idle_run(event: SummaryEvent) -> bool:
    """An after-turn run that changed nothing and called no model: counted on the chain, not kept as a row, so
    the events timeline shows what changed (a manage-mode call and its turn used to leave two such rows)."""
    return event.trigger == Trigger.TURN and event.outcome == Outcome.SKIPPED and not event.calls


def _count_idle(chain: Chain, events: list[SummaryEvent]) -> None:
    idle = [e for e in events if e.pk is not None and is_idle_run(e)]
    if idle:
        SummaryEvent.objects.filter(pk__in=[e.pk for e in idle]).delete()
        Chain.objects.filter(pk=chain.pk).update(skipped_runs=F("skipped_runs") + len(idle))


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


def on_view_saved(chain_id: int, view: ChainView | None, events: list[SummaryEvent], compactions: int,
                notify: bool, hooks: list[dict[str, Any]]) -> None:
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
