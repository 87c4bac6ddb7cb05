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
from datetime import timedelta
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
from flows.models.chains import AGENT_TYPES, MESSAGE_COLUMNS
from flows.services.queue import SUMMARIZE_CHAIN, enqueue
from flows.text_input import lone_surrogate_path, plain_text_problem

__all__ = [
    "MAX_BATCH_MESSAGES", "MAX_IMPORT_MESSAGES", "MAX_MESSAGE_BYTES", "AppendError", "AppendResult", "flow_create",
    "flow_set_status", "agent_create",
    "chain_append", "chain_append_locked", "batch_validate", "chain_import", "api_token_create", "turn_completed",
    "transcript_validate",
]

log = logging.getLogger(__name__)

MAX_BATCH_MESSAGES = 1000
MAX_IMPORT_MESSAGES = 100_000  # an imported transcript is one batch; only the per-message cap still applies
MAX_MESSAGE_BYTES = 4 * 1024 * 1024  # one message, JSON-encoded
IMPORT_CHUNK_ROWS = 1000  # rows per import transaction: SQLite's write lock is released between chunks
MAX_ID_CHARS = 200  # Message.tool_call_id / name columns
EVENT_MESSAGES_MAX_BYTES = 512 * 1024  # live event payload cap; pages fetch the rest by seq
FLOW_TOUCH_RESOLUTION = timedelta(seconds=1)


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


def _tail(empty: bool, last_calls: list[dict[str, Any]] | None, after: list[tuple[str, str]]) -> _Tail:
    """The pairing state after the last assistant message (`last_calls`) and the messages since (`after`)."""
    calls = {c["id"]: (c.get("function") or {}).get("name", "") for c in last_calls or []
             if c.get("function") is not None}
    return _Tail(empty=empty, calls=calls, answered={tid for role, tid in after if role == "tool"},
                 open_pair=all(role == "tool" for role, _ in after))


def _tail_of(chain: Chain) -> _Tail:
    last_ai = chain.messages.filter(role="assistant").order_by("-seq").first()
    if last_ai is None:
        return _Tail(empty=chain.last_seq == 0, calls={}, answered=set(), open_pair=False)
    after = list(chain.messages.filter(seq__gt=last_ai.seq).values_list("role", "tool_call_id"))
    return _tail(False, last_ai.tool_calls, after)


def _tail_in(prior: list[dict[str, Any]]) -> _Tail:
    """`_tail_of` for a chain whose messages the caller holds (`prior`), without reading them again."""
    for i in range(len(prior) - 1, -1, -1):
        if prior[i]["role"] == "assistant":
            after = [(m["role"], m.get("tool_call_id") or "") for m in prior[i + 1:]]
            return _tail(False, prior[i].get("tool_calls"), after)
    return _Tail(empty=not prior, calls={}, answered=set(), open_pair=False)


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
            extra={k: v for k, v in msg.items() if k not in MESSAGE_COLUMNS},
            byte_size=message_size(msg, names), token_count=_token_count(msg, model)))
    return rows


def _call_names(tool_calls: Any, wanted: set[str], names: dict[str, str]) -> None:
    for call in reversed(tool_calls or []):
        if call.get("id") in wanted and call.get("function") is not None:
            names.setdefault(call["id"], call["function"]["name"])


def _known_call_names(chain: Chain, batch: list[dict[str, Any]]) -> dict[str, str]:
    """Function names of the calls the batch's tool results answer (they count in a result's PentAGI size)."""
    wanted = {m["tool_call_id"] for m in batch if m["role"] == "tool"}
    names: dict[str, str] = {}
    if not wanted:
        return names
    for calls in chain.messages.filter(role="assistant").exclude(tool_calls=None).order_by("-seq") \
            .values_list("tool_calls", flat=True)[:50]:
        _call_names(calls, wanted, names)
    return names


def _call_names_in(prior: list[dict[str, Any]], batch: list[dict[str, Any]]) -> dict[str, str]:
    """`_known_call_names` from the messages the caller holds (the newest 50 assistant messages with calls)."""
    wanted = {m["tool_call_id"] for m in batch if m["role"] == "tool"}
    names: dict[str, str] = {}
    if wanted:
        with_calls = (m for m in reversed(prior) if m["role"] == "assistant" and m.get("tool_calls"))
        for _, message in zip(range(50), with_calls, strict=False):
            _call_names(message.get("tool_calls"), wanted, names)
    return names


def chain_append(*, chain: Chain, messages: Any) -> AppendResult:
    """Append a batch atomically (all or nothing); see the module docstring for what happens after commit."""
    batch = _validate_batch(messages)
    with transaction.atomic():
        locked = Chain.objects.select_for_update().select_related("agent__flow").get(pk=chain.pk)
        if not locked.is_active:
            active = Chain.objects.filter(agent_id=locked.agent_id, is_active=True).values_list("pk", flat=True)
            raise AppendError("chain_archived", "this chain segment is archived; append to the active chain",
                              status=409, extra={"active_chain_id": next(iter(active), None)})
        result = chain_append_locked(chain=locked, batch=batch)
    chain.last_seq, chain.tool_call_id_template, chain.raw_tokens = (locked.last_seq, locked.tool_call_id_template,
                                                                    locked.raw_tokens)
    return result


def chain_append_locked(*, chain: Chain, batch: list[dict[str, Any]], prior: list[dict[str, Any]] | None = None,
                        **chain_fields: Any) -> AppendResult:
    """The write of `chain_append` for a caller that already holds the active chain's row lock (with its
    agent and flow loaded) inside its own transaction and validated the batch (`batch_validate`).

    `prior`, when given, is the chain's whole raw history as the caller holds it (the gateway verified it by
    hash), so pairing and call names come from memory instead of two more reads; `chain_fields` are written
    in the same UPDATE as `last_seq` (the gateway's head hash).
    """
    tail = _tail_in(prior) if prior is not None else _tail_of(chain)
    done = _check_pairing(tail, batch)
    names = _call_names_in(prior, batch) if prior is not None else _known_call_names(chain, batch)
    rows = Message.objects.bulk_create(_build_rows(chain, batch, names, chain.agent.flow.model_name),
                                       batch_size=500)
    chain.last_seq += len(rows)
    chain.tool_call_id_template = _id_template(chain, batch)
    chain.raw_tokens = _tokens_after(chain.raw_tokens, rows)
    Chain.objects.filter(pk=chain.pk).update(last_seq=chain.last_seq, tool_call_id_template=chain.tool_call_id_template,
                                             raw_tokens=chain.raw_tokens, updated_at=timezone.now(), **chain_fields)
    _touch(chain.agent.flow)
    chain_id = chain.pk
    transaction.on_commit(lambda: _after_append(chain_id, rows, done), robust=True)
    return AppendResult(appended=len(rows), last_seq=chain.last_seq, rows=rows, turn_completed=done)


def _tokens_after(total: int | None, rows: list[Message]) -> int | None:
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
    return _validate_batch(messages, max_messages)


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

def transcript_validate(messages: Any) -> list[dict[str, Any]]:
    """Check a whole transcript as a new chain would (shape, order, tool pairing) without writing anything.

    A live replay appends it turn by turn later; checking it all first means it never stops half-way.
    """
    batch = _validate_batch(messages, MAX_IMPORT_MESSAGES)
    _check_pairing(_Tail(empty=True, calls={}, answered=set(), open_pair=False), batch)
    return batch


def chain_import(*, owner, data: Any, fmt: str | None = None, title: str = "", model_name: str = "",
                 agent_type: str = "primary_agent", profile: str = Profile.AGENT) -> Chain:
    """A new flow + agent + chain holding an imported transcript; all or nothing. Raises FormatError/AppendError."""
    messages = import_chain(data, fmt)
    if not messages:
        raise FormatError("the file holds no messages")
    if not model_name and isinstance(data, dict) and isinstance(data.get("model"), str):
        model_name = data["model"]
    batch = _validate_batch(messages, MAX_IMPORT_MESSAGES)
    done = _check_pairing(_Tail(empty=True, calls={}, answered=set(), open_pair=False), batch)
    with transaction.atomic():
        flow = flow_create(owner=owner, title=title or "Imported chain", model_name=model_name)
        agent = agent_create(flow=flow, agent_type=agent_type, profile=profile)
        chain = agent.chains.get(is_active=True)
    try:
        _import_rows(chain, batch, model_name, turn_done=done)
    except BaseException:
        flow.delete()  # all or nothing: the rows written so far go with their flow
        raise
    return chain


def _import_rows(chain: Chain, batch: list[dict[str, Any]], model: str, *, turn_done: bool) -> None:
    """Write an import in chunks, each its own short transaction.

    On SQLite a transaction holds the database's only write lock: a 20,000-message import in one transaction
    (token counting included) held it for tens of seconds, and every append, page save and summarization
    waited. Rows are measured before any transaction; the chain's last_seq moves (and the page hears of the
    messages) only in the final step, once every chunk is in.
    """
    rows = _build_rows(chain, batch, {}, model)
    for start in range(0, len(rows), IMPORT_CHUNK_ROWS):
        with transaction.atomic():
            Message.objects.bulk_create(rows[start:start + IMPORT_CHUNK_ROWS])
    tokens = _tokens_after(0, rows)
    with transaction.atomic():
        template = _id_template(chain, batch)
        Chain.objects.filter(pk=chain.pk).update(last_seq=len(rows), tool_call_id_template=template,
                                                 raw_tokens=tokens, updated_at=timezone.now())
        transaction.on_commit(lambda: _after_append(chain.pk, rows, turn_done), robust=True)
    chain.last_seq, chain.tool_call_id_template, chain.raw_tokens = len(rows), template, tokens
