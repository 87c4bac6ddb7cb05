"""The record of one gateway call (`GatewayCall`) and its live events: opened, retried, closed."""
from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from django.db import DatabaseError, transaction
from django.db.models import Count, Q, Sum
from django.utils import timezone

from flows.config import token_ratio_learn
from flows.core import broadcast
from flows.engine import count_tokens
from flows.gateway.fit import Msg, SentMessages
from flows.gateway.loops import agent_loop_check
from flows.gateway.threads import gateway_answer_append
from flows.ingest import AppendError, batch_validate
from flows.models import CallStatus, Chain, ChainView, GatewayCall, GatewayMode, Message, ProviderConfig

__all__ = ["gateway_call_start", "gateway_call_retried", "gateway_call_finish", "gateway_call_complete", "call_cost",
           "gateway_call_fail", "answer_unstorable"]

UNSTORABLE_PREFIX = "answer not storable: "

log = logging.getLogger(__name__)


def _call_event(call: GatewayCall, kind: str) -> dict[str, Any]:
    return {"type": kind, "chain_id": call.chain_id, "call_id": call.pk, "mode": call.mode, "model": call.model,
            "stream": call.stream, "status": call.status, "http_status": call.http_status,
            "sent_message_count": call.sent_message_count, "sent_tokens": call.sent_tokens,
            "attempts": call.attempts, "latency_ms": call.latency_ms, "first_byte_ms": call.first_byte_ms,
            "summarize_ms": call.summarize_ms,
            "response_seq": call.response_seq, "usage": call.usage, "cost_usd": call.cost_usd,
            "error": call.error[:500]}


def gateway_call_start(*, chain: Chain, user: Any, provider: ProviderConfig | None, model: str, mode: str,
                       stream: bool, request_messages: int, appended: int, sent: SentMessages,
                       request_params: dict[str, Any] | None = None, request_hash: str = "",
                       retry_of: int | None = None) -> GatewayCall:
    call = GatewayCall.objects.create(
        chain=chain, user=user, provider=provider, model=model, mode=mode, stream=stream,
        request_messages=request_messages, appended=appended, summarize_ms=sent.summarize_ms,
        request_params=request_params or {}, request_hash=request_hash, retry_of_id=retry_of,
        **_sent_fields(sent, model, chain.pk))
    transaction.on_commit(lambda: broadcast(chain.pk, _call_event(call, "gateway.call.started")))  # type: ignore
    return call


def _stored_tokens(chain_id: int, sent: SentMessages) -> int | None:
    """Our estimate of a reference call from what is stored (view tokens + cached raw tokens), without
    re-tokenizing the whole history on every call; None when a count is missing."""
    after, tokens = 0, 0
    if sent.view_version:
        view = ChainView.objects.filter(chain_id=chain_id, version=sent.view_version).values_list(
            "raw_seq_to", "token_count").first()
        if view is None:
            return None
        after, tokens = view
    rows = Message.objects.filter(chain_id=chain_id, seq__gt=after, seq__lte=sent.raw_seq_to)
    totals = rows.aggregate(tokens=Sum("token_count"), missing=Count("pk", filter=Q(token_count=None)))
    return None if totals["missing"] else tokens + (totals["tokens"] or 0)


def _sent_fields(sent: SentMessages, model: str, chain_id: int) -> dict[str, Any]:
    tokens = sent.tokens
    if tokens is None and sent.exact:
        tokens = _stored_tokens(chain_id, sent)
    return {"sent_view_version": sent.view_version, "sent_raw_seq_to": sent.raw_seq_to,
            "sent_messages": None if sent.exact else sent.messages, "sent_message_count": len(sent.messages),
            "sent_tokens": tokens if tokens is not None else count_tokens(sent.messages, model=model or None),
            "budget": sent.budget}


def _usage_tokens(usage: dict[str, Any]) -> tuple[int, int]:
    """(prompt, completion) tokens of OpenAI's usage, or Anthropic's (input = uncached + cache reads + writes)."""
    def number(key: str) -> int:
        value = usage.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    if "prompt_tokens" in usage or "completion_tokens" in usage:
        return number("prompt_tokens"), number("completion_tokens")
    prompt = number("input_tokens") + number("cache_read_input_tokens") + number("cache_creation_input_tokens")
    return prompt, number("output_tokens")


def call_cost(provider: ProviderConfig | None, usage: dict[str, Any] | None) -> float:
    if provider is None or not isinstance(usage, dict):
        return 0.0
    prompt, completion = _usage_tokens(usage)
    return (prompt * provider.prompt_cost_per_mtok + completion * provider.completion_cost_per_mtok) / 1e6


def gateway_call_retried(*, call: GatewayCall, sent: SentMessages, error: str) -> None:
    """An overflow retry: the call now records the compacted input it sends next."""
    for key, value in _sent_fields(sent, call.model, call.chain_id).items():
        setattr(call, key, value)
    call.summarize_ms += sent.summarize_ms
    call.attempts += 1
    call.save()
    event = {**_call_event(call, "gateway.call.retried"), "reason": error[:500]}
    broadcast(call.chain_id, event)  # type: ignore[arg-type]


_FINISH_FIELDS = ["status", "http_status", "latency_ms", "first_byte_ms", "response_message", "response_seq",
                  "usage", "cost_usd", "error", "finished_at", "phases"]


def gateway_call_finish(*, call: GatewayCall, status: str, http_status: int, latency_ms: int,
                        first_byte_ms: int | None = None, response: Msg | None = None, response_seq: int | None = None,
                        usage: dict[str, Any] | None = None, error: str = "") -> GatewayCall:
    call.status, call.http_status, call.latency_ms = status, http_status, latency_ms
    call.first_byte_ms, call.response_message, call.response_seq = first_byte_ms, response, response_seq
    call.usage, call.cost_usd = usage, call_cost(call.provider, usage)
    call.error, call.finished_at = error[:4000], timezone.now()
    call.save(update_fields=_FINISH_FIELDS)
    _learn_ratio(call)
    event = _call_event(call, "gateway.call.finished")
    transaction.on_commit(lambda: broadcast(call.chain_id, event), robust=True)  # type: ignore[arg-type]
    return call


def _learn_ratio(call: GatewayCall) -> None:
    """A successful call's reported prompt tokens against our estimate of the same request teach the
    provider's token ratio (`flows.config.token_ratio_learn`); the next request's fit uses it. Anthropic's
    prompt is input + cache reads + cache writes: with caching on, `input_tokens` alone is only the uncached
    tail and would teach a ratio far too low."""
    usage, budget = call.usage, call.budget
    if call.status != CallStatus.OK or not isinstance(usage, dict) or not isinstance(budget, dict):
        return
    reported, _completion = _usage_tokens(usage)
    if reported > 0:
        ours = int(budget.get("messages", 0)) + int(budget.get("tools", 0)) + int(budget.get("schema", 0))
        token_ratio_learn(call.provider, call.model, ours=ours, reported=reported)


def gateway_call_complete(*, call: GatewayCall, expected_head: str, history: list[Msg] | None,
                          answer: Msg | None, after_seq: int | None = None,
                          then: Callable[[GatewayCall], None] | None = None, replay: bool = False,
                          **finish: Any) -> GatewayCall:
    """The end of a call in one transaction: the complete answer appended (when the chain has not moved on
    meanwhile; see gateway_answer_append) and the call record closed; `finish` are gateway_call_finish's
    fields, `then` what the call's wire keeps beside the record (in the same transaction). A `replay`'s answer
    is kept on the record only: the chain already holds what came after its messages."""
    started = time.monotonic()
    problem = answer_unstorable(answer) if answer is not None else None
    if problem is not None:  # the agent has it; the chain cannot hold it (the call still ends, and says why)
        answer, finish["status"], finish["error"] = None, CallStatus.FAILED, UNSTORABLE_PREFIX + problem
    with transaction.atomic():
        seq = None
        if answer is not None and not replay:
            seq = gateway_answer_append(chain_id=call.chain_id, expected_head=expected_head, message=answer,
                                        history=history, after_seq=after_seq,
                                        queue_summary=call.mode != GatewayMode.MANAGE)
            if seq is None and not finish.get("error"):
                finish["error"] = "answer not appended: the chain moved on during the call"
            elif seq is not None and answer.get("tool_calls"):
                _loop_check(call, seq)
        call.phases = {**(call.phases or {}), "record_ms": int((time.monotonic() - started) * 1000)}
        closed = gateway_call_finish(call=call, response=answer, response_seq=seq, **finish)
        if then is not None:
            then(closed)
        return closed


def _loop_check(call: GatewayCall, seq: int) -> None:
    """Flag an agent loop the answer makes; a failure here is logged, never the call's (own savepoint)."""
    try:
        with transaction.atomic():
            chain = Chain.objects.select_related("agent").get(pk=call.chain_id)
            agent_loop_check(chain=chain, seq=seq, call_id=call.pk)
    except DatabaseError:
        log.exception("agent loop check failed for gateway call %s", call.pk)


def answer_unstorable(answer: Msg) -> str | None:
    """Why the chain cannot hold the upstream's answer (a lone surrogate, a NUL or over-long name or id, over
    MAX_MESSAGE_BYTES), or None. Checked before the record's transaction: the append's own check raising inside
    it would roll the call's record back with it, leaving the call "running"."""
    try:
        batch_validate([answer])
    except AppendError as exc:
        return (f"{exc.field}: " if exc.field else "") + exc.reason
    return None


def gateway_call_fail(call_id: int, reason: str, *, status: str = CallStatus.FAILED,
                      http_status: int | None = None) -> int:
    """Close a call no normal path will (its record could not be written after the upstream answered, or the
    agent hung up while it was admitted) with `status` and the reason; only while it is still running.
    Returns how many rows it closed (0 or 1)."""
    answered = {} if http_status is None else {"http_status": http_status}
    return GatewayCall.objects.filter(pk=call_id, status=CallStatus.RUNNING).update(
        status=status, error=reason[:4000], finished_at=timezone.now(), **answered)
