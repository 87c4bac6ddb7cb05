"""A cap on the live sockets one user holds open in this process (WS_MAX_PER_USER, default 20).

Each socket costs a channel-layer subscription and a share of every broadcast; one account opening thousands
(a leaked token in a loop, a runaway tab) would slow every viewer. Past the cap the consumer closes the new
socket with code 4429; closing one frees a slot. Counted per process: N Daphne processes allow N x the cap.
"""
from __future__ import annotations

import os
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from flows.live.sessions import user_group

__all__ = ["MAX_SOCKETS_PER_USER", "CLOSE_TOO_MANY", "socket_acquire", "socket_release", "sockets_open",
           "socket_admit", "socket_leave"]

MAX_SOCKETS_PER_USER = int(os.environ.get("WS_MAX_PER_USER", 20))
CLOSE_TOO_MANY = 4429

_open: Counter[int] = Counter()
_lock = threading.Lock()


def socket_acquire(user_id: int, limit: int | None = None) -> bool:
    """Take a slot for `user_id`; False when the user already holds `limit` sockets."""
    cap = MAX_SOCKETS_PER_USER if limit is None else limit
    with _lock:
        if _open[user_id] >= cap:
            return False
        _open[user_id] += 1
        return True


def socket_release(user_id: int) -> None:
    with _lock:
        _open[user_id] -= 1
        if _open[user_id] <= 0:
            del _open[user_id]


def sockets_open(user_id: int) -> int:
    with _lock:
        return _open[user_id]


async def socket_admit(consumer: AsyncJsonWebsocketConsumer, user: Any, visible: Callable[[Any], bool]) -> bool:
    """Every live socket's gate: close with 4401 (no session), 4404 (`visible(user)` says no, read in a thread)
    or 4429 (past the cap) and return False; else hold one of the user's slots, join the user's group (a
    logout closes the socket: flows.live.sessions) and return True (the caller accepts). A refused handshake
    reaches a browser as 1006, so the 4429 close comes after an accept: the tab can say why it is not live."""
    if user is None or not user.is_authenticated:
        await consumer.close(code=4401)
        return False
    if not await database_sync_to_async(visible)(user):
        await consumer.close(code=4404)
        return False
    if not socket_acquire(user.pk):
        await consumer.accept()
        await consumer.close(code=CLOSE_TOO_MANY)
        return False
    await consumer.channel_layer.group_add(user_group(user.pk), consumer.channel_name)  # sessions end sockets
    return True


async def socket_leave(consumer: AsyncJsonWebsocketConsumer, user_id: int) -> None:
    """Undo a successful `socket_admit`: free the slot, leave the user's group."""
    socket_release(user_id)
    await consumer.channel_layer.group_discard(user_group(user_id), consumer.channel_name)
