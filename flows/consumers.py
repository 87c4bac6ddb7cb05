"""WebSocket consumer: authenticate, check the user may see the chain, join its group, forward events.

Consumers never write to the database; the only read is the permission check on connect.
"""
from __future__ import annotations

from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from . import selectors
from .events import group_name
from .ws_limits import CLOSE_TOO_MANY, socket_acquire, socket_release


class ChainConsumer(AsyncJsonWebsocketConsumer):
    chain_id: int
    group: str
    slot_user_id: int | None = None  # set while this socket holds one of its user's slots (flows.ws_limits)

    async def connect(self) -> None:
        user = self.scope.get("user")
        self.chain_id = int(self.scope["url_route"]["kwargs"]["chain_id"])
        self.group = group_name(self.chain_id)
        if user is None or not user.is_authenticated:
            await self.close(code=4401)
            return
        allowed = await database_sync_to_async(selectors.chain_visible_to)(chain_id=self.chain_id, user=user)
        if not allowed:
            await self.close(code=4404)
            return
        if not socket_acquire(user.pk):
            await self.close(code=CLOSE_TOO_MANY)
            return
        self.slot_user_id = user.pk
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        await self.send_json({"type": "hello", "chain_id": self.chain_id})

    async def disconnect(self, code: int) -> None:
        if self.slot_user_id is not None:
            socket_release(self.slot_user_id)
            self.slot_user_id = None
        if getattr(self, "group", None):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        """Clients only listen; catching up goes through the HTTP API by seq."""

    async def chain_event(self, message: dict[str, Any]) -> None:
        await self.send_json(message["event"])
