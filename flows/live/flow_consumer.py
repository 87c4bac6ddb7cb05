"""The flow page's one socket (`/ws/flows/{id}/`): every chain of the flow on a single connection.

The flow page used to open one socket per active chain, so a flow with several agents took several of the
user's WS_MAX_PER_USER slots per tab. This consumer joins the group of each of the flow's chains and re-reads
the list every LIVE_HEARTBEAT_SECONDS, so a chain a new agent starts later is heard without a reload. It
forwards every event with its `chain_id`; appends go out without their message bodies (the flow page shows
counts, not text), which keeps a busy flow's frames small. Like the chain consumer it never writes.
"""
from __future__ import annotations

import asyncio
import json
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings

from flows.core import group_name
from flows.live.limits import socket_admit, socket_leave
from flows.live.sessions import SessionBound
from flows.models import Chain, Flow

__all__ = ["FlowConsumer"]

_APPENDS = ("message.appended", "message.appended_up_to")


def _flow_visible(flow_id: int, user: Any) -> bool:
    return Flow.objects.visible_to(user).filter(pk=flow_id).exists()


def _flow_chain_ids(flow_id: int) -> set[int] | None:
    """The ids of the flow's chains; None when the flow no longer exists."""
    if not Flow.objects.filter(pk=flow_id).exists():
        return None
    return set(Chain.objects.filter(agent__flow_id=flow_id).values_list("pk", flat=True))


def flow_frame(message: dict[str, Any]) -> str:
    """What the flow page receives for one chain event (`flows.core.layer_message`): appends are cut to their
    seq range, anything else goes out as it came."""
    if message["kind"] not in _APPENDS:
        return str(message["text"])
    return json.dumps({"type": "message.appended", "chain_id": message["chain_id"], "last_seq": message["last_seq"]})


class FlowConsumer(SessionBound):
    flow_id: int
    slot_user_id: int | None = None

    async def connect(self) -> None:
        user = self.scope.get("user")
        self.flow_id = int(self.scope["url_route"]["kwargs"]["flow_id"])
        self._chains: set[int] = set()
        self._task: asyncio.Task[None] | None = None
        if not await socket_admit(self, user, lambda viewer: _flow_visible(self.flow_id, viewer)):
            return
        self.slot_user_id = user.pk
        await self._join_new_chains()
        await self.accept()
        await self.send_json({"type": "hello", "flow_id": self.flow_id, "chain_ids": sorted(self._chains)})
        self._task = asyncio.create_task(self._rescan())

    async def disconnect(self, code: int) -> None:
        if self.slot_user_id is not None:
            user_id, self.slot_user_id = self.slot_user_id, None
            await socket_leave(self, user_id)
        if self._task is not None:
            self._task.cancel()
        for chain_id in getattr(self, "_chains", set()):
            await self.channel_layer.group_discard(group_name(chain_id), self.channel_name)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        """Clients only listen."""

    async def chain_event(self, message: dict[str, Any]) -> None:
        await self.send(text_data=flow_frame(message))

    async def _join_new_chains(self) -> bool:
        """Join the groups of chains the flow gained; False when the flow is gone."""
        ids = await database_sync_to_async(_flow_chain_ids)(self.flow_id)
        if ids is None:
            return False
        for chain_id in sorted(ids - self._chains):
            await self.channel_layer.group_add(group_name(chain_id), self.channel_name)
            self._chains.add(chain_id)
            if self._task is not None:  # not on connect: the hello frame lists those
                await self.send_json({"type": "flow.chain_added", "flow_id": self.flow_id, "chain_id": chain_id})
        return True

    async def _rescan(self) -> None:
        while True:
            await asyncio.sleep(settings.LIVE_HEARTBEAT_SECONDS)
            if not await self._join_new_chains():
                await self.close(code=4404)
                return
