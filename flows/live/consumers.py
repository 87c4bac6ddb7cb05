"""WebSocket consumer: authenticate, check the user may see the chain, join its group, forward events.

Consumers never write to the database. They read twice: the permission check on connect, and the chain's
`last_seq` for the heartbeat. Under load they coalesce: the first `message.appended` after a quiet moment goes
out at once (with its messages), later ones inside LIVE_COALESCE_SECONDS become one `message.appended_up_to`
frame carrying their messages (only their seq range when the burst is large or has a gap; the page then
fetches the bodies by seq). Fewer, smaller frames keep each viewer's channel-layer queue
short, and the heartbeat makes the page catch up even when the layer dropped the last frame of a burst.
"""
from __future__ import annotations

import asyncio
import json
import random
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings

from flows.core import AppendedUpToEvent, HeartbeatEvent, group_name
from flows.live.limits import socket_admit, socket_leave
from flows.live.sessions import SessionBound
from flows.models import Chain

BURST_MAX_MESSAGES = 200
BURST_MAX_BYTES = 512 * 1024  # past either cap the frame carries only seqs and the page fetches the bodies


def _visible(chain_id: int, user: Any) -> bool:
    return Chain.objects.visible_to(user).filter(pk=chain_id).exists()


def _last_seq(chain_id: int) -> int | None:
    """The chain's newest stored seq (the live heartbeat); None when the chain no longer exists."""
    return Chain.objects.filter(pk=chain_id).values_list("last_seq", flat=True).first()


class _Burst:
    """Appends held back inside one coalescing window: their seq range and, while small and gap-free, bodies.
    Built from the channel-layer messages (`flows.core.layer_message`): an append's JSON is decoded only here."""

    def __init__(self, message: dict[str, Any]) -> None:
        self.first, self.last = int(message["first_seq"]), int(message["last_seq"])
        self.messages: list[dict[str, Any]] = []
        self.bytes = 0
        self.whole = True  # every message of the range is in self.messages
        self.add(message, first=True)

    def add(self, message: dict[str, Any], *, first: bool = False) -> None:
        lo, hi = int(message["first_seq"]), int(message["last_seq"])
        if not first:
            self.whole = self.whole and lo == self.last + 1
            self.first, self.last = min(self.first, lo), max(self.last, hi)
        count = int(message["count"])
        self.whole = self.whole and count == hi - lo + 1 and len(self.messages) + count <= BURST_MAX_MESSAGES
        if not self.whole:
            self.messages = []
            return
        messages = json.loads(message["text"]).get("messages") or []
        self.bytes += sum(int(m.get("byte_size") or 0) for m in messages)
        self.whole = self.bytes <= BURST_MAX_BYTES
        self.messages = self.messages + messages if self.whole else []

    def frame(self, chain_id: int) -> AppendedUpToEvent:
        return {"type": "message.appended_up_to", "chain_id": chain_id, "first_seq": self.first,
                "last_seq": self.last, "messages": self.messages}


class ChainConsumer(SessionBound):
    chain_id: int
    group: str
    slot_user_id: int | None = None  # set while this socket holds one of its user's slots (flows.live.limits)

    async def connect(self) -> None:
        user = self.scope.get("user")
        self.chain_id = int(self.scope["url_route"]["kwargs"]["chain_id"])
        self.group = group_name(self.chain_id)
        self._burst: _Burst | None = None  # appends waiting to be flushed
        self._quiet_at = 0.0  # loop time before which appends are coalesced
        self._tasks: list[asyncio.Task[None]] = []
        if not await socket_admit(self, user, lambda viewer: _visible(self.chain_id, viewer)):
            return
        self.slot_user_id = user.pk
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        await self.send_json({"type": "hello", "chain_id": self.chain_id})
        self._tasks.append(asyncio.create_task(self._heartbeat()))

    async def disconnect(self, code: int) -> None:
        if self.slot_user_id is not None:
            user_id, self.slot_user_id = self.slot_user_id, None
            await socket_leave(self, user_id)
        for task in getattr(self, "_tasks", []):
            task.cancel()
        if getattr(self, "group", None):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        """Clients only listen; catching up goes through the HTTP API by seq."""

    async def chain_event(self, message: dict[str, Any]) -> None:
        """One event from the channel layer (`flows.core.layer_message`): its JSON goes out as it came."""
        if message["kind"] != "message.appended":
            await self._flush()  # keep the order: appends before the view that covers them
            await self.send(text_data=message["text"])
            return
        loop = asyncio.get_running_loop()
        window = settings.LIVE_COALESCE_SECONDS
        if self._burst is None and loop.time() >= self._quiet_at:
            self._quiet_at = loop.time() + window
            await self.send(text_data=message["text"])
            return
        if self._burst is None:
            self._burst = _Burst(message)
            self._tasks.append(asyncio.create_task(self._flush_after(max(0.0, self._quiet_at - loop.time()))))
        else:
            self._burst.add(message)

    async def _flush_after(self, delay: float) -> None:
        await asyncio.sleep(delay)
        await self._flush()

    async def _flush(self) -> None:
        if self._burst is None:
            return
        burst, self._burst = self._burst, None
        self._quiet_at = asyncio.get_running_loop().time() + settings.LIVE_COALESCE_SECONDS
        self._tasks = [t for t in self._tasks if not t.done() and t is not asyncio.current_task()]
        await self.send_json(burst.frame(self.chain_id))

    async def _heartbeat(self) -> None:
        period = settings.LIVE_HEARTBEAT_SECONDS
        await asyncio.sleep(random.uniform(0.5, 1.0) * period)  # spread many viewers' reads over the period
        while True:
            last_seq = await database_sync_to_async(_last_seq)(self.chain_id)
            if last_seq is None:
                await self.close(code=4404)
                return
            frame: HeartbeatEvent = {"type": "heartbeat", "chain_id": self.chain_id, "last_seq": last_seq}
            await self.send_json(frame)
            await asyncio.sleep(period)
