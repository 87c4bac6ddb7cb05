"""Sessions end sockets: a logout, a password change, a deactivated or deleted user closes the user's live sockets.

Every live socket joins its user's group (`user-<id>`). A logout closes the sockets of the session it ends
(the same user signed in elsewhere stays live) with 4401; deactivating or deleting the user closes all of them
with 4401. A password change closes all of them with 4503 (reconnect): each reconnects at once and the
handshake decides, since Channels' session check compares the session's password hash, so the session that
changed the password comes back and every other session gets 4401. The message goes through the channel layer,
so with Redis it reaches every server process; with the embedded in-memory layer it reaches the sockets of the
process where the change happened (the web pages, the admin).
"""
from __future__ import annotations

from typing import Any

from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.contrib.auth import get_user_model
from django.contrib.auth.signals import user_logged_out
from django.db import transaction
from django.db.models.signals import post_delete, post_save, pre_save

from flows.core import group_notify

__all__ = ["CLOSE_SIGNED_OUT", "CLOSE_RECONNECT", "SESSION_END", "user_group", "connect_session_signals",
           "closes_socket", "SessionBound"]

CLOSE_SIGNED_OUT = 4401  # also the code of a handshake without a session: the page stops trying
CLOSE_RECONNECT = 4503  # the server asks the page to reconnect (with backoff); the handshake then decides
SESSION_END = "session.end"  # the channel-layer message type; consumers handle it as `session_end`
_PENDING = "_live_close_code"  # set on a User instance between its pre_save and post_save


def user_group(user_id: int) -> str:
    return f"user-{user_id}"


def closes_socket(message: dict[str, Any], session_key: str | None) -> bool:
    """Whether a `session.end` message is for the socket of the session `session_key`."""
    wanted = message.get("session_key")
    return wanted is None or wanted == session_key


def end_sockets(user_id: int, code: int, session_key: str | None = None) -> None:
    """Close the user's sockets (only those of `session_key` when given) with `code`."""
    group_notify(user_group(user_id), {"type": SESSION_END, "code": code, "session_key": session_key})


def _logged_out(sender: Any, request: Any, user: Any, **kwargs: Any) -> None:
    if user is not None and user.pk is not None:
        session = getattr(request, "session", None)
        end_sockets(user.pk, CLOSE_SIGNED_OUT, getattr(session, "session_key", None) or None)


def _before_user_save(sender: Any, instance: Any, update_fields: Any = None, **kwargs: Any) -> None:
    """Note what the save changes for the sockets; a login's `last_login` save costs no read."""
    if instance.pk is None or (update_fields is not None and not {"password", "is_active"} & set(update_fields)):
        return
    old = sender.objects.filter(pk=instance.pk).values("password", "is_active").first()
    if old is None:
        return
    if old["is_active"] and not instance.is_active:
        setattr(instance, _PENDING, CLOSE_SIGNED_OUT)
    elif old["password"] != instance.password:
        setattr(instance, _PENDING, CLOSE_RECONNECT)


def _after_user_save(sender: Any, instance: Any, **kwargs: Any) -> None:
    code = instance.__dict__.pop(_PENDING, None)
    if code is not None:  # after commit: a rolled-back change closes nothing
        user_id = instance.pk
        transaction.on_commit(lambda: end_sockets(user_id, code))


def _after_user_delete(sender: Any, instance: Any, **kwargs: Any) -> None:
    user_id = instance.pk
    transaction.on_commit(lambda: end_sockets(user_id, CLOSE_SIGNED_OUT))


def connect_session_signals() -> None:
    """Connected once, from the app's ready()."""
    user_model = get_user_model()
    user_logged_out.connect(_logged_out, dispatch_uid="flows.live.sessions.logged_out")
    pre_save.connect(_before_user_save, sender=user_model, dispatch_uid="flows.live.sessions.before_save")
    post_save.connect(_after_user_save, sender=user_model, dispatch_uid="flows.live.sessions.after_save")
    post_delete.connect(_after_user_delete, sender=user_model, dispatch_uid="flows.live.sessions.after_delete")


class SessionBound(AsyncJsonWebsocketConsumer):
    """A live socket that its session's end closes: handles `session.end`, then sends nothing more."""

    _session_ended = False

    async def session_end(self, message: dict[str, Any]) -> None:
        session = self.scope.get("session")
        if self._session_ended or not closes_socket(message, getattr(session, "session_key", None)):
            return
        self._session_ended = True  # events already queued for this socket are dropped, not sent
        await self.close(code=int(message.get("code") or CLOSE_SIGNED_OUT))

    async def send(self, text_data: str | None = None, bytes_data: bytes | None = None, close: bool = False) -> None:
        """Every frame (`send_json` too) passes here: none once the session ended."""
        if not self._session_ended:
            await super().send(text_data=text_data, bytes_data=bytes_data, close=close)
