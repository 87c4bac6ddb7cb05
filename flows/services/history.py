"""Writes to the raw history: flows, agents, chains and the append-only messages.

`chain_append` is the one way messages enter the database. It validates the whole batch first (shape via
`flows.engine.validate_messages`, then tool-call pairing in the context of the chain's tail), writes it
in one transaction under a row lock on the chain, and only after commit tells the world: a `message.appended`
event for live pages and, when the batch completes an agent turn, a summarization task.
"""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.utils import timezone

from flows.engine import (
    FormatError,
    MessageError,
    detect_id_template,
    import_chain,
    message_size,
    message_tokens,
    validate_messages,
)
from flows.events import broadcast
from flows.models import Agent, ApiToken, Chain, Flow, FlowStatus, Message, Profile
from flows.models.chains import AGENT_TYPES
from flows.services.queue import SUMMARIZE_CHAIN, enqueue

__all__ = [
    "MAX_BATCH_MESSAGES", "MAX_IMPORT_MESSAGES", "MAX_MESSAGE_BYTES", "AppendError", "AppendResult", "flow_create",
    "flow_set_status", "agent_create",
    "chain_append", "chain_import", "api_token_create", "turn_completed",
]

log = logging.getLogger(__name__)

MAX_BATCH_MESSAGES = 1000
MAX_IMPORT_MESSAGES = 100_000  # an imported transcript is one batch; only the per-message cap still applies
MAX_MESSAGE_BYTES = 4 * 1024 * 1024  # one message, JSON-encoded
MAX_ID_CHARS = 200  # Message.tool_call_id / name columns
EVENT_MESSAGES_MAX_BYTES = 512 * 1024  # live event payload cap; pages fetch the rest by seq


class AppendError(ValueError):
    """A batch that cannot be stored; nothing of it was written. `status` is the HTTP status it maps to."""

    def __init__(self, code: str, reason: str, *, index: int | None = None, field: str = "",
                 status: int = 400, extra: dict[str, Any] | None = None) -> None:
        where = f"message {index}: " if index is not None else ""
        super().__init__(where + (f"{field}: " if field else "") + reason)
        self.code, self.reason, self.index, self.field, self.status = code, reason, index, field, status
        self.extra = extra or {}


@dataclass
class AppendResult:
    appended: int
    last_seq: int
    rows: list[Message] = field(default_factory=list)
    turn_completed: bool = False


def _plain(text: str) -> str:
    """PostgreSQL text columns cannot hold U+0000 (a 500 otherwise); in a title or model name it means nothing."""
    return text.replace("\x00", "")


def flow_create(*, owner, title: str, model_name: str = "") -> Flow:
    return Flow.objects.create(owner=owner, title=(_plain(title or "") or "Untitled flow")[:200],
                               model_name=_plain(model_name)[:200])


def flow_set_status(*, flow_id: int, status: str) -> None:
    """The status an agent reports for its flow (running, waiting, finished, failed)."""
    if status not in FlowStatus.values:
        raise ValueError(f"unknown flow status {status!r}")
    Flow.objects.filter(pk=flow_id).update(status=status)


def agent_create(*, flow: Flow, agent_type: str, profile: str = Profile.AGENT) -> Agent:
    """An agent and its active chain (the id template is detected later, from the ids the agent uses)."""
    if agent_type not in AGENT_TYPES:
        raise ValueError(f"unknown agent type {agent_type!r}")
    if profile not in Profile.values:
        raise ValueError(f"unknown profile {profile!r}")
    with transaction.atomic():
        agent = Agent.objects.create(flow=flow, agent_type=agent_type, profile=profile)
        Chain.objects.create(agent=agent)
    return agent


def api_token_create(*, user, name: str = "agent") -> tuple[ApiToken, str]:
    """A new bearer token; the raw value is returned once and never stored."""
    return ApiToken.issue(user=user, name=name[:100] or "agent")


# ----------------------------------------------------------------------------------------------- pairing

@dataclass
class _Tail:
    """What the chain's end looks like for pairing: empty or not, and the calls of the current pair."""

    empty: bool
    calls: dict[str, str]  # call id -> function name, of the most recent assistant message
    answered: set[str]
    open_pair: bool  # False once a user/system message followed that assistant message


def _tail_of(chain: Chain) -> _Tail:
    last_ai = chain.messages.filter(role="assistant").order_by("-seq").first()
    if last_ai is None:
        return _Tail(empty=chain.last_seq == 0, calls={}, answered=set(), open_pair=False)
    after = list(chain.messages.filter(seq__gt=last_ai.seq).values_list("role", "tool_call_id"))
    calls = {c["id"]: (c.get("function") or {}).get("name", "") for c in last_ai.tool_calls or []
             if c.get("function") is not None}
    return _Tail(empty=False, calls=calls, answered={tid for role, tid in after if role == "tool"},
                 open_pair=all(role == "tool" for role, _ in after))


def _check_pairing(tail: _Tail, batch: list[dict[str, Any]]) -> bool:
    """Reject what PentAGI's force-repair cannot fix; return whether the batch ends a turn."""
    for i, msg in enumerate(batch):
        role = msg["role"]
        if tail.empty and role not in ("system", "user"):
            raise AppendError("invalid_order", "a chain must start with a system or user message", index=i,
                              field="role")
        if role == "system" and not tail.empty:
            raise AppendError("invalid_order", "a system message is only allowed as the first message", index=i,
                              field="role")
        if role == "assistant":
            tail.calls = {c["id"]: c["function"]["name"] for c in msg.get("tool_calls") or []
                          if c.get("function") is not None}
            tail.answered, tail.open_pair = set(), True
        elif role == "tool":
            _check_tool_result(tail, msg, i)
        else:
            tail.open_pair = False  # a user message while calls are pending is fine: PentAGI answers them
        tail.empty = False
    last = batch[-1]
    if last["role"] == "assistant":
        return not tail.calls
    return last["role"] == "tool" and set(tail.calls) <= tail.answered


def _check_tool_result(tail: _Tail, msg: dict[str, Any], i: int) -> None:
    call_id = msg["tool_call_id"]
    if not tail.open_pair or call_id not in tail.calls:
        raise AppendError("orphan_tool_result", f"tool result {call_id!r} answers no call of the assistant "
                          "message before it", index=i, field="tool_call_id")
    if call_id in tail.answered:
        raise AppendError("orphan_tool_result", f"tool call {call_id!r} is already answered", index=i,
                          field="tool_call_id")
    tail.answered.add(call_id)


def turn_completed(*, chain: Chain) -> bool:
    """Whether the stored chain ends an agent turn (answer without calls, or all calls of the round answered)."""
    last = chain.messages.order_by("-seq").first()
    if last is None or last.role not in ("assistant", "tool"):
        return False
    tail = _tail_of(chain)
    return (not tail.calls) if last.role == "assistant" else set(tail.calls) <= tail.answered


# ----------------------------------------------------------------------------------------------- append

def _validate_batch(messages: Any, max_messages: int = MAX_BATCH_MESSAGES) -> list[dict[str, Any]]:
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
        for key in ("tool_call_id", "name"):
            if len(msg.get(key) or "") > MAX_ID_CHARS:
                raise AppendError("invalid_message", f"longer than {MAX_ID_CHARS} characters", index=i, field=key)
        size = len(json.dumps(msg, ensure_ascii=False).encode("utf-8"))
        if size > MAX_MESSAGE_BYTES:
            raise AppendError("message_too_large", f"{size} bytes, at most {MAX_MESSAGE_BYTES}", index=i,
                              status=413)
    return messages


def _id_template(chain: Chain, batch: list[dict[str, Any]]) -> str:
    """PentAGI stores the id template per chain; we learn it from the first call ids the agent sends."""
    if chain.tool_call_id_template:
        return chain.tool_call_id_template
    has_calls = any(m.get("tool_calls") for m in batch)
    return detect_id_template(batch) if has_calls else ""


def _token_count(msg: dict[str, Any], model: str | None) -> int | None:
    return message_tokens(msg, model=model or None)


def _build_rows(chain: Chain, batch: list[dict[str, Any]], names: dict[str, str], model: str) -> list[Message]:
    rows = []
    for offset, msg in enumerate(batch, start=1):
        for call in msg.get("tool_calls") or []:
            if call.get("function") is not None:
                names[call["id"]] = call["function"]["name"]
        rows.append(Message(
            chain=chain, seq=chain.last_seq + offset, role=msg["role"], content=msg.get("content"),
            tool_calls=msg.get("tool_calls") or None, tool_call_id=msg.get("tool_call_id") or "",
            name=msg.get("name") or "", reasoning=msg.get("reasoning"),
            byte_size=message_size(msg, names), token_count=_token_count(msg, model)))
    return rows


def _known_call_names(chain: Chain, batch: list[dict[str, Any]]) -> dict[str, str]:
    """Function names of the calls the batch's tool results answer (they count in a result's PentAGI size)."""
    wanted = {m["tool_call_id"] for m in batch if m["role"] == "tool"}
    names: dict[str, str] = {}
    if not wanted:
        return names
    for calls in chain.messages.filter(role="assistant").exclude(tool_calls=None).order_by("-seq") \
            .values_list("tool_calls", flat=True)[:50]:
        for call in reversed(calls or []):
            if call.get("id") in wanted and call.get("function") is not None:
                names.setdefault(call["id"], call["function"]["name"])
    return names


def chain_append(*, chain: Chain, messages: Any) -> AppendResult:
    """Append a batch atomically (all or nothing); see the module docstring for what happens after commit."""
    return _append(chain, _validate_batch(messages))


def _append(chain: Chain, batch: list[dict[str, Any]]) -> AppendResult:
    with transaction.atomic():
        locked = Chain.objects.select_for_update().select_related("agent__flow").get(pk=chain.pk)
        if not locked.is_active:
            active = Chain.objects.filter(agent_id=locked.agent_id, is_active=True).values_list("pk", flat=True)
            raise AppendError("chain_archived", "this chain segment is archived; append to the active chain",
                              status=409, extra={"active_chain_id": next(iter(active), None)})
        done = _check_pairing(_tail_of(locked), batch)
        rows = Message.objects.bulk_create(_build_rows(
            locked, batch, _known_call_names(locked, batch), locked.agent.flow.model_name), batch_size=500)
        locked.last_seq += len(rows)
        locked.tool_call_id_template = _id_template(locked, batch)
        Chain.objects.filter(pk=locked.pk).update(
            last_seq=locked.last_seq, tool_call_id_template=locked.tool_call_id_template, updated_at=timezone.now())
        Flow.objects.filter(pk=locked.agent.flow_id).update(updated_at=timezone.now())
        transaction.on_commit(lambda: _after_append(locked.pk, rows, done), robust=True)
    chain.last_seq, chain.tool_call_id_template = locked.last_seq, locked.tool_call_id_template
    return AppendResult(appended=len(rows), last_seq=locked.last_seq, rows=rows, turn_completed=done)


def _event_messages(rows: list[Message]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    used = 0
    for row in rows:
        item = {**row.to_dict(), "seq": row.seq, "byte_size": row.byte_size, "token_count": row.token_count}
        used += len(json.dumps(item, ensure_ascii=False))
        if used > EVENT_MESSAGES_MAX_BYTES and out:
            break  # the page sees last_seq beyond the last message it got and catches up by seq
        out.append(item)
    return out


def _after_append(chain_id: int, rows: list[Message], turn_done: bool) -> None:
    broadcast(chain_id, {"type": "message.appended", "chain_id": chain_id, "messages": _event_messages(rows),
                         "last_seq": rows[-1].seq})
    if turn_done:
        enqueue(SUMMARIZE_CHAIN, chain_id)


# ----------------------------------------------------------------------------------------------- import

def chain_import(*, owner, data: Any, fmt: str | None = None, title: str = "", model_name: str = "",
                 agent_type: str = "primary_agent", profile: str = Profile.AGENT) -> Chain:
    """A new flow + agent + chain holding an imported transcript; all or nothing. Raises FormatError/AppendError."""
    messages = import_chain(data, fmt)
    if not messages:
        raise FormatError("the file holds no messages")
    if not model_name and isinstance(data, dict) and isinstance(data.get("model"), str):
        model_name = data["model"]
    with transaction.atomic():
        flow = flow_create(owner=owner, title=title or "Imported chain", model_name=model_name)
        agent = agent_create(flow=flow, agent_type=agent_type, profile=profile)
        chain = agent.chains.get(is_active=True)
        _append(chain, _validate_batch(messages, MAX_IMPORT_MESSAGES))
    return chain
