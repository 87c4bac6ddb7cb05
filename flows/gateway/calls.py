"""One call end to end, after `admission.prepare_call`: forward, recover from overflows, answer, record.

The wire's shapes (upstream URL and body, errors, the answer, the stream's events) come from the call's
protocol (`flows/gateway/protocols/`); everything here is the same for every wire format.

Observe mode forwards the agent's body byte for byte (only the model is rewritten when it carried our
`provider/` prefix); manage mode forwards the prepared view. Either way a context-overflow error from the
upstream is compacted (forced, with the token count the error reports) and retried at most
MAX_OVERFLOW_RETRIES times; every other error status passes through untouched. The answer is appended to the
chain only when it arrived complete and the chain has not moved meanwhile: nothing is ever half-written.
"""
from __future__ import annotations

import asyncio
import functools
import logging
import re
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from typing import Any

import httpx2

from flows.config import token_ratio_learn
from flows.core import abroadcast
from flows.engine import is_context_overflow_error, observed_token_count
from flows.gateway import hops, upstream
from flows.gateway.admission import PreparedCall
from flows.gateway.fit import SentMessages, call_guard_for, gateway_overflow_compact
from flows.gateway.protocols import StreamReader
from flows.gateway.records import gateway_call_complete, gateway_call_fail, gateway_call_retried
from flows.gateway.wire import GatewayError, WireRequest
from flows.models import CallStatus, GatewayCall, GatewayMode

__all__ = ["MAX_OVERFLOW_RETRIES", "DELTA_INTERVAL_SECONDS", "upstream_body", "open_upstream", "complete",
           "stream_events", "finish", "settled", "record_or_fail"]

logger = logging.getLogger(__name__)

MAX_OVERFLOW_RETRIES = 3
DELTA_INTERVAL_SECONDS = 0.25  # live text of a streaming call reaches the page at most 4 times a second
_pending: dict[str, set[asyncio.Future[None]]] = {}  # caller -> call records being written (see finish)


def upstream_body(request: WireRequest, prepared: PreparedCall, messages: list[dict[str, Any]] | None,
                  max_output: int | None = None) -> bytes:
    """Bytes to send: the agent's own body in observe mode (unless retried), else the body with our messages
    and, when the fit clamped it, the max output the view leaves room for."""
    return prepared.protocol.upstream_body(request, prepared.model, messages,
                                           manage=prepared.mode == GatewayMode.MANAGE, max_output=max_output)


def _elapsed_ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)


async def finish(prepared: PreparedCall, started: float, *, status: str, http_status: int,
                 first_byte_ms: int | None = None, answer: dict[str, Any] | None = None,
                 usage: dict[str, Any] | None = None, error: str = "") -> None:
    """Append a complete answer (if any) and close the call record, whatever the agent does meanwhile.

    Under the gateway's own handler this is written after the answer went out, so the agent does not wait
    for our bookkeeping (a few milliseconds a call, as much as the rest of the gateway's work); its next request
    waits for it first (`settled`), so it finds its answer in the chain. A request of another server process
    may get in first: then the chain holds the answer already and the record points at it
    (gateway_answer_append). Elsewhere (Django's test client) it is written before returning.
    """
    latency_ms = _elapsed_ms(started)

    def run() -> None:
        gateway_call_complete(call=prepared.call, expected_head=prepared.head_hash, history=prepared.history,
                              after_seq=prepared.chain.last_seq, answer=answer, status=status,
                              http_status=http_status, latency_ms=latency_ms, first_byte_ms=first_byte_ms,
                              usage=usage, error=error, then=then, replay=prepared.replay)

    def then(call: GatewayCall) -> None:
        if prepared.wire is not None:
            prepared.protocol.recorded(prepared.wire, call, answer)

    if not hops.in_gateway_handler():
        await asyncio.shield(hops.run(record_or_fail, prepared.call.pk, run))
        return
    written: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    _pending.setdefault(prepared.caller, set()).add(written)
    written.add_done_callback(functools.partial(_forget, prepared.caller))

    async def job() -> None:
        try:
            await hops.run(record_or_fail, prepared.call.pk, run)
        finally:
            written.set_result(None)

    hops.after_response(job)


def record_or_fail(call_id: int, write: Callable[[], None]) -> None:
    """Write a call's end; when that raises (after the upstream answered: the agent has or gets its answer),
    the call is still closed, as failed with the exception, and the traceback logged."""
    try:
        write()
    except Exception as exc:
        logger.exception("gateway call %s: its record could not be written", call_id)
        try:
            gateway_call_fail(call_id, f"record not written: {type(exc).__name__}: {exc}")
        except Exception:  # the database itself is gone: the periodic sweep closes the call later
            logger.exception("gateway call %s: could not be closed as failed either", call_id)


def _forget(caller: str, written: asyncio.Future[None]) -> None:
    tasks = _pending.get(caller, set())
    tasks.discard(written)
    if not tasks:
        _pending.pop(caller, None)


async def settled(caller: str) -> None:
    """Wait until the records of this caller's earlier calls (same API key) are written."""
    tasks = _pending.get(caller)
    if tasks:
        await asyncio.wait(list(tasks))


async def open_upstream(request: WireRequest, prepared: PreparedCall, deadline: float, *,
                        overflow: str = "") -> httpx2.Response:
    """The upstream response with a success status (headers read), after at most 3 overflow retries;
    `overflow` is one the upstream reported inside the previous attempt's stream: compacted first."""
    if not prepared.last_body:
        first = prepared.sent.messages if prepared.mode == GatewayMode.MANAGE else None
        prepared.last_body = upstream_body(request, prepared, first,
                                           prepared.sent.max_output if first is not None else None)
    url, headers = prepared.protocol.endpoint(prepared.provider, request)
    refused: GatewayError | None = None
    while True:
        if overflow:
            await _shrink(request, prepared, overflow, refused)
        async with asyncio.timeout_at(deadline + prepared.compact_seconds):
            response = await upstream.open_post(url, prepared.last_body, headers)
            if response.status_code < 400:
                return response
            try:
                raw = await response.aread()
            finally:
                await response.aclose()
        overflow = raw.decode("utf-8", "replace")
        refused = prepared.protocol.upstream_error(response.status_code, raw)
        if not is_context_overflow_error(overflow):
            raise refused


async def _shrink(request: WireRequest, prepared: PreparedCall, overflow: str, refused: GatewayError | None) -> None:
    """After an overflow: compact (forced, with the token count the error reports) and make the next body;
    the upstream's refusal when the retries are spent or the compaction could not shrink the request."""
    given_up = refused or GatewayError(400, f"the upstream reported a context overflow: {overflow[:500]}",
                                       type_="upstream_error", code="context_length_exceeded")
    if prepared.call.attempts > MAX_OVERFLOW_RETRIES or prepared.replay:
        raise given_up  # a replay's compaction would fit the chain's newer state, not the request it repeats
    compacting = time.monotonic()
    sent = await hops.run(_overflow_refit, prepared, overflow)
    prepared.compact_seconds += time.monotonic() - compacting  # ours (bounded by the call's guard), not the upstream's
    retry = upstream_body(request, prepared, sent.messages, sent.max_output)
    if retry == prepared.last_body:  # the same request would fail the same way
        raise _not_compacted(given_up, sent.failure)
    await hops.run(gateway_call_retried, call=prepared.call, sent=sent, error=overflow)
    prepared.last_body = retry


def _not_compacted(refused: GatewayError, failure: str) -> GatewayError:
    """The upstream's refusal, or, when our compaction failed (a summary model with `summary_fallback` 'fail'),
    one error that says so."""
    if not failure:
        return refused
    return GatewayError(refused.status, "the upstream reported a context overflow and compacting the chain to fit "
                        f"it failed: {failure}", type_="upstream_error", code="context_length_exceeded")


_IN_THE_MESSAGES = re.compile(r"\(([\d,]+) in the messages")  # OpenAI: "you requested N tokens (P in the messages, ..."


def _prompt_count(text: str) -> int | None:
    """The prompt's tokens an overflow error quotes: its "P in the messages" part when it splits the request
    into prompt and completion, else the one count it gives."""
    split = _IN_THE_MESSAGES.search(text)
    return int(split.group(1).replace(",", "")) if split else observed_token_count(text)


def _overflow_refit(prepared: PreparedCall, text: str) -> SentMessages:
    """Learn from the count the overflow quotes (it measured the request we sent), then compact to the same
    request budget with the corrected ratio: the retry, and the agent's next request, fit."""
    needs, observed = prepared.needs, _prompt_count(text)
    sent_tokens = (prepared.call.budget or {}).get("messages", prepared.call.sent_tokens)
    if needs is not None and observed:
        ratio = token_ratio_learn(prepared.provider, prepared.model, ours=sent_tokens + needs.extra,
                                  reported=observed, overflow=True)
        if ratio is not None:  # at least the overflow's own ratio (`overflow=True`)
            needs = prepared.needs = replace(needs, ratio=ratio)
    prepared.guard = prepared.guard or call_guard_for(prepared.chain)  # one bound for the whole call
    return gateway_overflow_compact(chain_id=prepared.chain.pk, observed_tokens=observed, needs=needs,
                                    model=prepared.model, guard=prepared.guard)


async def complete(request: WireRequest, prepared: PreparedCall, started: float) -> bytes:
    """Non-streaming: the upstream's JSON body (forwarded as it came) once it is a valid completion."""
    deadline = asyncio.get_running_loop().time() + prepared.provider.timeout_seconds
    try:
        response = await open_upstream(request, prepared, deadline)
        async with asyncio.timeout_at(deadline + prepared.compact_seconds):
            try:
                raw = await response.aread()
            finally:
                await response.aclose()
    except (httpx2.HTTPError, TimeoutError) as exc:
        raise upstream.upstream_error(exc) from None
    answer, usage = prepared.protocol.answer(raw)
    raw = prepared.protocol.reply(request, raw)
    await finish(prepared, started, status=CallStatus.OK, http_status=200, first_byte_ms=_elapsed_ms(started),
                 answer=answer, usage=usage)
    return raw


async def stream_events(request: WireRequest, prepared: PreparedCall, response: httpx2.Response,
                        started: float, deadline: float) -> AsyncIterator[bytes]:
    """Forward SSE events as they arrive, assembling the answer; a broken stream ends with an error event."""
    manage = prepared.mode == GatewayMode.MANAGE
    reader = prepared.protocol.stream_reader(request, manage=manage)
    first_byte, last_delta, sent_text = None, time.monotonic(), 0
    status, error, reported, usage = CallStatus.FAILED, "", False, None
    answer: dict[str, Any] | None = None
    try:
        async with asyncio.timeout_at(deadline + prepared.compact_seconds) as scope:
            while True:
                async for chunk in response.aiter_raw():
                    for event in reader.feed(chunk):
                        first_byte = first_byte if first_byte is not None else _elapsed_ms(started)
                        yield event
                    if time.monotonic() - last_delta >= DELTA_INTERVAL_SECONDS:
                        sent_text, last_delta = await _send_delta(prepared, reader, sent_text), time.monotonic()
                result = reader.result()
                if not result.overflow:
                    break
                await response.aclose()  # an overflow the agent has not seen yet: compact and retry
                scope.reschedule(None)  # compacting is bounded by the call's guard; each attempt by its own deadline
                try:
                    response = await open_upstream(request, prepared, deadline, overflow=result.overflow)
                except GatewayError:
                    for event in reader.release():  # the agent gets the failure as the upstream reported it
                        yield event
                    break
                reader = prepared.protocol.stream_reader(request, manage=manage)
                scope.reschedule(deadline + prepared.compact_seconds)
        answer, usage, error, reported = result.answer, result.usage, result.error, result.reported
        if answer is not None:
            status = CallStatus.OK
    except (asyncio.CancelledError, GeneratorExit):
        status, error = CallStatus.CANCELLED, "the agent hung up before the answer was complete"
        raise
    except (ValueError, KeyError, TypeError) as exc:
        error = f"the upstream sent a malformed stream: {exc}"[:500]
    except (httpx2.HTTPError, TimeoutError) as exc:
        error = upstream.upstream_error(exc).message
    finally:
        await response.aclose()
        await finish(prepared, started, status=status, http_status=200, first_byte_ms=first_byte,
                     answer=answer if status == CallStatus.OK else None, usage=usage, error=error)
    if status != CallStatus.OK and not reported:
        yield prepared.protocol.stream_error(error)


async def _send_delta(prepared: PreparedCall, reader: StreamReader, sent_text: int) -> int:
    text = reader.text()
    if len(text) > sent_text:
        await abroadcast(prepared.chain.pk, {"type": "gateway.call.delta", "chain_id": prepared.chain.pk,
                                             "call_id": prepared.call.pk, "text": text[sent_text:]})
    return len(text)
