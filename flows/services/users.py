"""Accounts the commands create: the demo user and the owners of replayed flows."""
from __future__ import annotations

import secrets

from django.contrib.auth import get_user_model

__all__ = ["PASSWORD_BYTES", "user_ensure"]

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
