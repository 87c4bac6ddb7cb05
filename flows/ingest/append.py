"""Writes to the raw history: flows, agents, chains and the append-only messages.

`chain_append` is the one way messages enter the database. It validates the whole batch first (shape via
`flows.engine.validate_messages`, then tool-call pairing in the context of the chain's tail), writes it
in one transaction under a row lock on the chain, and only after commit tells the world: a `message.appended`
event for live pages and, when the batch completes an agent turn, a summarization task.
"""
from __future__ import annotations

import json
import logging
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from flows.core import (
    NOT_QUEUED_REASON,
    SUMMARIZE_CHAIN,
    BrokerUnreachable,
    broadcast,
    enqueue,
    lone_surrogate_path,
    plain_text_problem,
)
from flows.engine import MessageError, detect_id_template, message_size, message_tokens, validate_messages
from flows.ingest.chain_lock import locked_chain
from flows.ingest.errors import AppendError, AppendResult
from flows.ingest.pairing import check_pairing, tail_for, tail_in
from flows.ingest.rows_insert import HeadUpdate, rows_insert
from flows.models import MESSAGE_COLUMNS, Chain, Flow, Message, Outcome, SummaryEvent, Trigger

__all__ = ["MAX_BATCH_MESSAGES", "MAX_IMPORT_MESSAGES", "MAX_MESSAGE_BYTES", "chain_append", "chain_append_locked",
           "batch_validate"]

log = logging.getLogger(__name__)

MAX_BATCH_MESSAGES = 1000
MAX_IMPORT_MESSAGES = 100_000  # an imported transcript is one batch; only the per-message cap still applies
MAX_MESSAGE_BYTES = 4 * 1024 * 1024  # one message, JSON-encoded
MAX_ID_CHARS = 200  # Message.tool_call_id / name columns
EVENT_MESSAGES_MAX_BYTES = 512 * 1024  # live event payload cap; pages fetch the rest by seq
FLOW_TOUCH_RESOLUTION = timedelta(seconds=1)


def validate_batch(messages: Any, max_messages: int = MAX_BATCH_MESSAGES) -> list[dict[str, Any]]:
    if not isinstance(messages, list) or not messages:
        raise AppendError("invalid_batch", "'messages' must be a non-empty list of messages")
    if len(messages) > max_messages:
        raise AppendError("batch_too_large", f"at most {max_messages} messages per batch, got "
                          f"{len(messages)}", status=413)
    try:
        validate_messages(messages)
    except MessageError as exc:
        raise AppendError("invalid_message", exc.reason, index=exc.index if exc.index >= 0 else None,
                          field=exc.field) from None
    for i, msg in enumerate(messages):
        _check_text(i, msg)
        size = len(json.dumps(msg, ensure_ascii=False).encode("utf-8"))
        if size > MAX_MESSAGE_BYTES:
            raise AppendError("message_too_large", f"{size} bytes, at most {MAX_MESSAGE_BYTES}", index=i,
                              status=413)
    return messages


def _check_text(index: int, msg: dict[str, Any]) -> None:
    """What the database cannot hold: lone surrogates anywhere, NUL or overlong text in the plain columns."""
    where = lone_surrogate_path(msg)
    if where is not None:
        raise AppendError("invalid_text", "holds a lone UTF-16 surrogate, which is not valid Unicode", index=index,
                          field=where)
    for key in ("tool_call_id", "name"):
        text = msg.get(key) or ""
        if len(text) > MAX_ID_CHARS:
            raise AppendError("invalid_message", f"longer than {MAX_ID_CHARS} characters", index=index, field=key)
        problem = plain_text_problem(text)
        if problem is not None:
            raise AppendError("invalid_message", problem, index=index, field=key)
    _check_calls(index, msg.get("tool_calls"))


def _check_calls(index: int, calls: Any) -> None:
    """Tool calls the chain can answer: a `function` object each, ids the tool_call_id column can hold (the
    agent's result must be appendable), and no id twice (one answer could never pair with both)."""
    seen: set[str] = set()
    for j, call in enumerate(calls if isinstance(calls, list) else []):
        field = f"tool_calls[{j}]"
        if not isinstance(call, dict) or not isinstance(call.get("function"), dict):
            raise AppendError("invalid_message", "a tool call needs a 'function' object", index=index,
                              field=f"{field}.function")
        call_id = call.get("id")
        if not isinstance(call_id, str):
            continue  # the engine's own check names a missing id
        problem = plain_text_problem(call_id) or (
            f"longer than {MAX_ID_CHARS} characters" if len(call_id) > MAX_ID_CHARS else None)
        if problem is not None:
            raise AppendError("invalid_message", problem, index=index, field=f"{field}.id")
        if call_id in seen:
            raise AppendError("invalid_message", f"the tool-call id {call_id!r} appears twice in one message",
                              index=index, field=f"{field}.id")
        seen.add(call_id)


def id_template(chain: Chain, batch: list[dict[str, Any]]) -> str:
    """PentAGI stores the id template per chain; we learn it from the first call ids the agent sends."""
    if chain.tool_call_id_template:
        return chain.tool_call_id_template
    has_calls = any(m.get("tool_calls") for m in batch)
    return detect_id_template(batch) if has_calls else ""


def _token_count(msg: dict[str, Any], model: str | None) -> int | None:
    return message_tokens(msg, model=model or None)


def build_rows(chain: Chain, batch: list[dict[str, Any]], names: dict[str, str], model: str) -> list[Message]:
    rows = []
    for offset, msg in enumerate(batch, start=1):
        for call in msg.get("tool_calls") or []:
            if call.get("function") is not None:
                names[call["id"]] = call["function"]["name"]
        rows.append(Message(
            chain=chain, seq=chain.last_seq + offset, role=msg["role"], content=msg.get("content"),
            tool_calls=msg.get("tool_calls") or None, tool_call_id=msg.get("tool_call_id") or "",
            name=msg.get("name") or "", reasoning=msg.get("reasoning"),
            extra={k: v for k, v in msg.items() if k not in MESSAGE_COLUMNS},
            byte_size=message_size(msg, names), token_count=_token_count(msg, model)))
    return rows


def chain_append(*, chain: Chain | int, messages: Any, visible_to: Any = None) -> AppendResult:
    """Append a batch atomically (all or nothing); see the module docstring for what happens after commit.

    `chain` is a Chain (its `last_seq`, `tool_call_id_template` and `raw_tokens` are brought up to date) or a
    chain id. With `visible_to` (a user), a chain that user may not see is `Chain.DoesNotExist`, read in the
    same locking query, so an API append is one query fewer than a visibility check before the lock."""
    batch = validate_batch(messages)
    with transaction.atomic():
        locked = locked_chain(chain if isinstance(chain, int) else chain.pk, visible_to)
        if not locked.is_active:
            active = Chain.objects.filter(agent_id=locked.agent_id, is_active=True).values_list("pk", flat=True)
            raise AppendError("chain_archived", "this chain segment is archived; append to the active chain",
                              status=409, extra={"active_chain_id": next(iter(active), None)})
        result = chain_append_locked(chain=locked, batch=batch)
    if isinstance(chain, Chain):
        chain.last_seq, chain.tool_call_id_template, chain.raw_tokens = (
            locked.last_seq, locked.tool_call_id_template, locked.raw_tokens)
    return result


def chain_append_locked(*, chain: Chain, batch: list[dict[str, Any]], prior: list[dict[str, Any]] | None = None,
                        queue_summary: bool = True, **chain_fields: Any) -> AppendResult:
    """The write of `chain_append` for a caller that already holds the active chain's row lock (with its
    agent and flow loaded) inside its own transaction and validated the batch (`batch_validate`).

    `prior`, when given, is the chain's whole raw history as the caller holds it (the gateway verified it by
    hash), so pairing and call names come from memory instead of two more reads; `chain_fields` are written
    in the same UPDATE as `last_seq` (the gateway's head hash). `queue_summary=False`: a completed turn is not
    queued for summarization (the gateway's manage mode summarizes on its next request, one run per call).
    """
    tail = tail_in(prior) if prior is not None else tail_for(chain, batch)
    # A tool result pairs only with a call of the newest assistant message before it (check_pairing), so the
    # names its PentAGI size counts are that message's: the tail's calls, then the batch's own (build_rows);
    # a batch whose first tool result follows an assistant message of its own reads no tail (`tail_needed`).
    names = dict(tail.calls)
    done = check_pairing(tail, batch)
    rows = build_rows(chain, batch, names, chain.agent.flow.model_name)
    chain.last_seq += len(rows)
    chain.tool_call_id_template = id_template(chain, batch)
    chain.raw_tokens = tokens_after(chain.raw_tokens, rows)
    now = timezone.now()
    said, queue = summary_decision(chain, turn_done=done and queue_summary, now=now)
    if queue:
        chain_fields["summary_queued_at"] = now
    rows = rows_insert(rows, head=HeadUpdate(Chain, chain.pk, {
        "last_seq": chain.last_seq, "tool_call_id_template": chain.tool_call_id_template,
        "raw_tokens": chain.raw_tokens, "updated_at": now, **chain_fields}))
    _touch(chain.agent.flow)
    chain_id = chain.pk
    result = AppendResult(appended=len(rows), last_seq=chain.last_seq, rows=rows, turn_completed=done,
                          summarization=said)
    transaction.on_commit(lambda: after_append(chain_id, rows, queue, result), robust=True)
    return result


def summary_decision(chain: Chain, *, turn_done: bool, now: Any) -> tuple[str, bool]:
    """Coalescing: what the append says about the summarization, and whether it queues one. Read under the
    chain's row lock: a run already queued and not yet started (`summary_queued_at` set; the run clears it as it
    starts, then loads the newest state) covers this turn too, so a burst of turns queues one run, not one each.
    A turn that finds the flag clear (nothing queued, or the run already started) sets it and queues."""
    if not turn_done:
        return "none", False
    if chain.summary_queued_at is not None:
        return "coalesced", False
    chain.summary_queued_at = now
    return "pending", True


def tokens_after(total: int | None, rows: list[Message]) -> int | None:
    """The chain's running token total (Chain.raw_tokens) once `rows` are in; unknown stays unknown."""
    if total is None or any(row.token_count is None for row in rows):
        return None
    return total + sum(row.token_count or 0 for row in rows)


def _touch(flow: Flow) -> None:
    """Mark the flow active; within FLOW_TOUCH_RESOLUTION of the last mark the write is skipped (an agent
    appends several times a second through the gateway, and lists only sort flows by it)."""
    now = timezone.now()
    if flow.updated_at is None or now - flow.updated_at >= FLOW_TOUCH_RESOLUTION:
        Flow.objects.filter(pk=flow.pk).update(updated_at=now)
        flow.updated_at = now


def batch_validate(messages: Any, max_messages: int = MAX_BATCH_MESSAGES) -> list[dict[str, Any]]:
    """Check a batch's shape as `chain_append` does (AppendError when it cannot be stored); writes nothing."""
    return validate_batch(messages, max_messages)


def _event_messages(rows: list[Message]) -> list[dict[str, Any]]:
    items = [{**row.to_dict(), "seq": row.seq, "byte_size": row.byte_size, "token_count": row.token_count}
             for row in rows]
    if len(json.dumps(items, ensure_ascii=False)) <= EVENT_MESSAGES_MAX_BYTES:
        return items  # the usual batch: one encoding, longer than the items' added up, says they all fit
    out: list[dict[str, Any]] = []
    used = 0
    for item in items:
        used += len(json.dumps(item, ensure_ascii=False))
        if used > EVENT_MESSAGES_MAX_BYTES and out:
            break  # the page sees last_seq beyond the last message it got and catches up by seq
        out.append(item)
    return out


def after_append(chain_id: int, rows: list[Message], turn_done: bool, result: AppendResult | None = None) -> None:
    """After commit: announce the rows and, when they end a turn, queue the chain's summarization; a broker that
    does not answer is said (`result.summarization`) and recorded as a failed event the sweep queues again."""
    broadcast(chain_id, {"type": "message.appended", "chain_id": chain_id, "messages": _event_messages(rows),
                         "last_seq": rows[-1].seq})
    if not turn_done:
        return
    try:  # in the gateway the outbox thread publishes it, and records a refusal the same way
        queued = enqueue(SUMMARIZE_CHAIN, chain_id, refused=lambda: not_queued_record(chain_id),
                         delay=settings.SUMMARY_DELAY_SECONDS)  # turns appended while it waits coalesce into it
        said = "queued" if queued else "pending"
    except BrokerUnreachable:
        log.warning("chain %s: its summarization was not queued (broker unreachable)", chain_id, exc_info=True)
        not_queued_record(chain_id)
        said = NOT_QUEUED_REASON
    if result is not None:
        result.summarization = said


def not_queued_record(chain_id: int) -> None:
    """One failed turn event per chain saying the summarization was not queued (the sweep's outbox: it queues the
    chain once the broker answers again and marks the event so); a second miss before then adds nothing. The
    coalescing flag is cleared: nothing waits in the queue, so the next turn tries to queue again."""
    Chain.objects.filter(pk=chain_id).update(summary_queued_at=None)
    waiting = SummaryEvent.objects.filter(chain_id=chain_id, outcome=Outcome.FAILED, reason=NOT_QUEUED_REASON)
    if not waiting.exists():
        SummaryEvent.objects.create(chain_id=chain_id, trigger=Trigger.TURN, outcome=Outcome.FAILED,
                                    reason=NOT_QUEUED_REASON, finished_at=timezone.now())
