"""The live-event contract: one TypedDict per WebSocket event and the one function that sends them.

Services and tasks call `broadcast(chain_id, event)`; consumers only forward what arrives on the group
`chain-<id>`. Every event carries `type`, `chain_id` and, where relevant, the raw `seq` it is about, so a
client that reconnects can ask for what it missed (`GET /api/chains/{id}/messages?after_seq=N`).

Two frames exist only between the consumer and the browser (never broadcast): `AppendedUpToEvent`, which replaces a
burst of `message.appended` events inside one coalescing window, and `HeartbeatEvent`, sent every few seconds with the
chain's stored `last_seq`. Both tell the page "the chain has messages up to seq N": a page holding less fetches
the rest by seq, so a frame the channel layer dropped under load can delay a message but never lose it.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal, TypedDict

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from flows.core.relay import relay_current

__all__ = [
    "MessageAppendedEvent", "ViewUpdatedEvent", "CompactionStartedEvent", "CompactionCompletedEvent",
    "CompactionSkippedEvent", "CompactionFailedEvent", "GatewayCallEvent", "GatewayCallDeltaEvent",
    "ChainRewrittenEvent", "AgentLoopEvent", "FlowAgentAddedEvent",
    "ChainEvent", "EVENT_TYPES", "AppendedUpToEvent", "HeartbeatEvent", "FRAME_TYPES",
    "group_name", "group_notify", "broadcast", "abroadcast", "bind_event_loop", "BroadcastBatch",
    "broadcasts_batched", "layer_message",
]

log = logging.getLogger(__name__)


class MessageAppendedEvent(TypedDict):
    type: Literal["message.appended"]
    chain_id: int
    messages: list[dict[str, Any]]  # each: canonical message + "seq", "byte_size", "token_count"
    last_seq: int


class ViewUpdatedEvent(TypedDict):
    type: Literal["view.updated"]
    chain_id: int
    version: int
    raw_seq_to: int
    byte_size: int
    token_count: int
    messages: int  # number of messages in the view; the page fetches the view itself


class CompactionStartedEvent(TypedDict):
    type: Literal["compaction.started"]
    chain_id: int
    event_id: int
    trigger: str


class CompactionCompletedEvent(TypedDict):
    type: Literal["compaction.completed"]
    chain_id: int
    event_id: int
    trigger: str
    bytes_before: int
    bytes_after: int
    tokens_before: int
    tokens_after: int
    calls: int
    duration_ms: int
    compactions: int


class CompactionSkippedEvent(TypedDict):
    """A compaction that finished without changing the view (nothing to compact, already fits): its notice
    must still close, or a user who asked for "compact now" waits for a report that never comes."""

    type: Literal["compaction.skipped"]
    chain_id: int
    event_id: int
    trigger: str
    reason: str


class CompactionFailedEvent(TypedDict):
    type: Literal["compaction.failed"]
    chain_id: int
    event_id: int
    trigger: str
    reason: str


class GatewayCallEvent(TypedDict):
    """A model call through the gateway (`/v1/chat/completions`): started, retried after an overflow, finished."""

    type: Literal["gateway.call.started", "gateway.call.retried", "gateway.call.finished"]
    chain_id: int
    call_id: int
    mode: str  # observe | manage
    model: str
    stream: bool
    status: str  # running | ok | upstream_error | failed | cancelled
    http_status: int
    sent_message_count: int
    sent_tokens: int  # our estimate of what went upstream
    attempts: int
    latency_ms: int
    first_byte_ms: int | None
    summarize_ms: int  # of latency_ms: summarizing/fitting the view on the request path
    response_seq: int | None  # raw seq of the appended answer
    usage: dict[str, Any] | None  # the provider's usage object
    cost_usd: float
    error: str


class GatewayCallDeltaEvent(TypedDict):
    """Text of a streamed answer as it arrives (throttled; the finished event carries the whole answer's seq)."""

    type: Literal["gateway.call.delta"]
    chain_id: int
    call_id: int
    text: str


class ChainRewrittenEvent(TypedDict):
    """The agent resent a rewritten history: the chain continues in `successor_id` (sent to both chains)."""

    type: Literal["chain.rewritten"]
    chain_id: int
    successor_id: int
    event_id: int
    messages_before: int
    messages_after: int


class AgentLoopEvent(TypedDict):
    """The agent repeated one tool call `repeats` times (in a row, or within its last `window` calls)."""

    type: Literal["agent.loop"]
    chain_id: int
    loop_id: int
    tool_name: str
    repeats: int
    in_a_row: bool
    window: int


class FlowAgentAddedEvent(TypedDict):
    """A new agent (or a new chain of one) joined the chain's flow: sent to the flow's other active chains, so
    an open flow page shows it and listens to `new_chain_id`."""

    type: Literal["flow.agent_added"]
    chain_id: int
    flow_id: int
    agent_type: str
    new_chain_id: int


# Named *Event so that `CompactionFailedEvent` (a live notice) is never confused with the engine's exception
# `summarizer.CompactionFailed`.
ChainEvent = (MessageAppendedEvent | ViewUpdatedEvent | CompactionStartedEvent | CompactionCompletedEvent
              | CompactionSkippedEvent | CompactionFailedEvent | GatewayCallEvent | GatewayCallDeltaEvent
              | ChainRewrittenEvent | AgentLoopEvent | FlowAgentAddedEvent)
EVENT_TYPES = ("message.appended", "view.updated", "compaction.started", "compaction.completed", "compaction.skipped",
               "compaction.failed", "gateway.call.started", "gateway.call.retried", "gateway.call.finished",
               "gateway.call.delta", "chain.rewritten", "agent.loop", "flow.agent_added")


class AppendedUpToEvent(TypedDict):
    """Consumer -> browser: several appends arrived within one coalescing window, as one frame.

    `messages` holds every message from `first_seq` to `last_seq` when the burst was small and gap-free, else it
    is empty; a page holding less than `last_seq` after adding them fetches the rest by seq.
    """

    type: Literal["message.appended_up_to"]
    chain_id: int
    first_seq: int
    last_seq: int
    messages: list[dict[str, Any]]


class HeartbeatEvent(TypedDict):
    """Consumer -> browser, every LIVE_HEARTBEAT_SECONDS: the chain's stored last seq (catch up if behind)."""

    type: Literal["heartbeat"]
    chain_id: int
    last_seq: int


FRAME_TYPES = ("hello", "message.appended_up_to", "heartbeat")


def group_name(chain_id: int) -> str:
    return f"chain-{chain_id}"


_server_loop: asyncio.AbstractEventLoop | None = None


def bind_event_loop(loop: asyncio.AbstractEventLoop | None) -> None:
    """Route broadcasts from foreign threads through the server's event loop (the embedded run command).

    The in-memory channel layer keeps asyncio queues owned by the loop that serves the WebSockets; a worker
    thread sending through `async_to_sync` would touch them from another loop and the waiting consumer
    might never wake. Bound, every broadcast runs on that loop. Redis layers need none of this.
    """
    global _server_loop
    _server_loop = loop


def _running_on(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


class BroadcastBatch:
    """The broadcasts a thread makes while it works for a coroutine of the server's loop (a gateway thread hop),
    handed to that loop in one go when the coroutine has the thread's result (`hand_over`).

    Handed over one by one, each broadcast wakes the loop from the middle of the thread's work and the two
    threads trade the interpreter lock back and forth while a model call waits; batched, the loop sends them
    on the wake-up it takes anyway to resume the coroutine, in the order they were made. A broadcast made
    after the hand-over (the coroutine was cancelled while the thread ran on) goes the usual way."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: list[tuple[Any, str, dict[str, Any]]] = []
        self._open = True

    def add(self, layer: Any, group: str, message: dict[str, Any]) -> bool:
        with self._lock:
            if self._open:
                self._items.append((layer, group, message))
            return self._open

    def hand_over(self) -> None:
        """On the server's loop: close the batch and send what it holds, in order, in one task."""
        with self._lock:
            self._open, items, self._items = False, self._items, []
        if items:
            task = asyncio.ensure_future(_send_all(items))
            _sending.add(task)
            task.add_done_callback(_sending.discard)


_sending: set[asyncio.Future[None]] = set()  # batches being sent (referenced until done)
_batched = threading.local()


@contextmanager
def broadcasts_batched(batch: BroadcastBatch) -> Iterator[None]:
    """Within the block, this thread's broadcasts go into `batch` (see BroadcastBatch)."""
    previous = getattr(_batched, "batch", None)
    _batched.batch = batch
    try:
        yield
    finally:
        _batched.batch = previous


async def _send_all(items: list[tuple[Any, str, dict[str, Any]]]) -> None:
    for layer, group, message in items:
        try:
            await layer.group_send(group, message)
        except Exception:  # best effort, like every broadcast: the page catches up by seq
            log.warning("broadcast of %s to %s failed", message.get("type"), group, exc_info=True)


def _send(layer: Any, group: str, message: dict[str, Any]) -> None:
    batch: BroadcastBatch | None = getattr(_batched, "batch", None)
    if batch is not None and batch.add(layer, group, message):
        return
    loop = _server_loop
    if loop is not None and loop.is_running() and not _running_on(loop):
        # Handed to the loop without waiting: a write (a gateway call's appends) must not stall on the loop's
        # turn. The loop runs these in the order they were handed over, so one thread's events keep their order.
        future = asyncio.run_coroutine_threadsafe(layer.group_send(group, message), loop)
        future.add_done_callback(_log_failure)
        return
    async_to_sync(layer.group_send)(group, message)


def _log_failure(future: concurrent.futures.Future[Any]) -> None:
    if not future.cancelled() and future.exception() is not None:
        log.warning("broadcast failed", exc_info=future.exception())


def group_notify(group: str, message: dict[str, Any]) -> None:
    """Send a channel-layer message to `group` from sync code (signal handlers), on the server's loop when one
    is bound; best effort like `broadcast`, never failing the caller (no layer: nothing to tell)."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        _send(layer, group, message)
    except Exception:
        log.warning("message %s to %s failed", message.get("type"), group, exc_info=True)


def layer_message(event: ChainEvent | dict[str, Any]) -> dict[str, Any]:
    """What travels through the channel layer for one event: its JSON, encoded once for every viewer (the
    in-memory layer deep-copies a message for each of a group's sockets, and each socket encoded it again), with
    the fields the consumers decide on beside it: `kind` (the event's type) and, for an append, its seq range
    (`first_seq`, `last_seq`). A consumer decodes `text` only to merge appends into one frame."""
    fields: dict[str, Any] = dict(event)
    message: dict[str, Any] = {"type": "chain.event", "kind": fields["type"], "text": json.dumps(fields)}
    if fields["type"] == "message.appended":
        seqs = [int(m["seq"]) for m in fields.get("messages") or [] if isinstance(m, dict) and "seq" in m]
        last = int(fields.get("last_seq") or 0)
        message.update(chain_id=fields.get("chain_id"), first_seq=min(seqs) if seqs else last,
                       last_seq=max([last, *seqs]), count=len(seqs))
    return message


def broadcast(chain_id: int, event: ChainEvent) -> None:
    """Send one event to everyone watching the chain. Live updates are best effort: never fail a write."""
    assert event["type"] in EVENT_TYPES, event["type"]
    relay = relay_current()
    layer = None if relay is not None else get_channel_layer()
    if relay is None and layer is None:
        return
    try:
        if relay is not None:  # another process serves the browsers (flows.core.relay): it broadcasts for us
            relay.send_event(chain_id, dict(event))
            return
        _send(layer, group_name(chain_id), layer_message(event))
    except Exception:  # a dead Redis must not turn an append into an error; the page catches up by seq
        log.warning("broadcast of %s to chain %s failed", event["type"], chain_id, exc_info=True)


async def abroadcast(chain_id: int, event: ChainEvent) -> None:
    """`broadcast` for code already on the event loop (the gateway's streaming answers); also best effort."""
    assert event["type"] in EVENT_TYPES, event["type"]
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        await layer.group_send(group_name(chain_id), layer_message(event))
    except Exception:
        log.warning("broadcast of %s to chain %s failed", event["type"], chain_id, exc_info=True)
