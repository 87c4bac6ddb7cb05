"""The one bearer-token check: `Authorization: Bearer <token>` for agents, on the API and the gateway alike.

Tokens as last checked are kept per process: every gateway call authenticates, and the lookup was a sizeable
part of what the gateway adds to a call. Saving or deleting a token or its user in this process drops the
copy (`tokens_changed`); a change made by another process is seen within TOKEN_CACHE_SECONDS. Inside a
transaction the table is read, so a write that is rolled back never lingers here.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models.signals import post_delete, post_save
from django.utils import timezone

from flows.ingest.accounts import api_token_mark_used
from flows.models import ApiToken, hash_token

__all__ = ["InvalidToken", "bearer_value", "bearer_user", "tokens_changed", "TOKEN_CACHE_SECONDS",
           "LAST_USED_RESOLUTION"]

TOKEN_CACHE_SECONDS = 2.0
TOKEN_CACHE_SIZE = 1000
LAST_USED_RESOLUTION = timedelta(minutes=1)  # spare a write per request for busy agents


class InvalidToken(LookupError):
    """A bearer token was given but matches no token of an active user."""


@dataclass
class _Checked:
    checked_at: float
    token_id: int
    user: Any
    last_used_at: datetime | None


_checked: dict[str, _Checked] = {}
_checked_lock = threading.Lock()


def tokens_changed(**_: Any) -> None:
    """Drop the checked tokens (receiver of ApiToken and User saves and deletes): now and at commit."""
    _forget_tokens()
    transaction.on_commit(_forget_tokens)


def _forget_tokens() -> None:
    with _checked_lock:
        _checked.clear()


# The copy exists once this module is loaded, so this module is where edits are watched for (a user
# deactivated, say); the user model by its label, as settings name it.
for _sender in (ApiToken, settings.AUTH_USER_MODEL):
    post_save.connect(tokens_changed, sender=_sender, dispatch_uid=f"tokens_changed_save_{_sender}")
    post_delete.connect(tokens_changed, sender=_sender, dispatch_uid=f"tokens_changed_delete_{_sender}")


def bearer_value(authorization: str) -> str | None:
    """The token of an `Authorization: Bearer <token>` header value; None for any other header."""
    scheme, _, value = authorization.partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


def bearer_user(raw_token: str) -> Any:
    """The active user the token belongs to (InvalidToken otherwise); its last use is recorded once a minute."""
    key = hash_token(raw_token)
    checked = _checked.get(key)
    if checked is None or time.monotonic() - checked.checked_at > TOKEN_CACHE_SECONDS \
            or transaction.get_connection().in_atomic_block:
        checked = _check(key)
    now = timezone.now()
    if checked.last_used_at is None or now - checked.last_used_at > LAST_USED_RESOLUTION:
        api_token_mark_used(token_id=checked.token_id, now=now)
        checked.last_used_at = now
    return checked.user


def _check(key: str) -> _Checked:
    token = ApiToken.objects.select_related("user").filter(key_hash=key).first()
    if token is None or not token.user.is_active:
        with _checked_lock:
            _checked.pop(key, None)
        raise InvalidToken("invalid API token")
    checked = _Checked(time.monotonic(), token.pk, token.user, token.last_used_at)
    with _checked_lock:
        if len(_checked) >= TOKEN_CACHE_SIZE:
            _checked.clear()
        _checked[key] = checked
    return checked
