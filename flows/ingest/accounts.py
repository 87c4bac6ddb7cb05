"""Accounts the commands create: the demo user and the owners of replayed flows, and the demo agent's token."""
from __future__ import annotations

import secrets
from datetime import datetime

from django.contrib.auth import get_user_model
from django.db import transaction

from flows.models import ApiToken

__all__ = ["PASSWORD_BYTES", "user_ensure", "api_token_rotate", "api_token_create", "api_token_mark_used"]

PASSWORD_BYTES = 12  # token_urlsafe: 16 characters, about 96 bits


def user_ensure(*, username: str):
    """(user, password): the user named `username`, created with a random password when missing.

    The password is returned only when the user was created, so the caller prints it once; only its hash is
    stored.
    """
    users = get_user_model()
    user = users.objects.filter(username=username).first()
    if user is not None:
        return user, None
    password = secrets.token_urlsafe(PASSWORD_BYTES)
    return users.objects.create_user(username=username, password=password), password


def api_token_rotate(*, user, name: str) -> str:
    """A fresh raw token named `name` for `user`; earlier tokens of that name stop working.

    For a process's own agent (the demo): it holds the raw value in memory only, so the one a previous start
    issued can never be used again and is removed instead of piling up."""
    with transaction.atomic():
        ApiToken.objects.filter(user=user, name=name).delete()
        return ApiToken.issue(user=user, name=name)[1]


def api_token_create(*, user, name: str = "agent") -> tuple[ApiToken, str]:
    """A new bearer token; the raw value is returned once and never stored."""
    return ApiToken.issue(user=user, name=name[:100] or "agent")


def api_token_mark_used(*, token_id: int, now: datetime) -> None:
    """When the token was last used (shown in the admin; written at most once a minute per token)."""
    ApiToken.objects.filter(pk=token_id).update(last_used_at=now)
