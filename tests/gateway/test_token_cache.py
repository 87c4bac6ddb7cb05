"""The gateway's per-process token checks: edits in this process take effect at once, others' within seconds."""
from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

from flows.gateway.admission import authenticate_bearer
from flows.gateway.wire import GatewayError
from flows.ingest import auth
from flows.models import ApiToken

pytestmark = pytest.mark.django_db(transaction=True)  # the copy is only used outside transactions


def _auth(raw: str) -> Any:
    return authenticate_bearer({"Authorization": f"Bearer {raw}"})


def _refused(raw: str) -> bool:
    try:
        _auth(raw)
    except GatewayError as exc:
        return exc.status == 401
    return False


def test_a_token_deleted_or_a_user_deactivated_here_is_refused_on_the_next_call(user: Any) -> None:
    token, raw = ApiToken.issue(user=user)
    assert _auth(raw).pk == user.pk
    token.delete()
    assert _refused(raw)
    _, raw = ApiToken.issue(user=user)
    assert _auth(raw).pk == user.pk
    user.is_active = False
    user.save()
    assert _refused(raw)


def test_a_token_removed_by_another_process_is_refused_once_the_copy_is_too_old(user: Any,
                                                                                monkeypatch: Any) -> None:
    token, raw = ApiToken.issue(user=user)
    assert _auth(raw).pk == user.pk
    with connection.cursor() as cursor:  # no signal in this process, as for another process's delete
        cursor.execute(f"DELETE FROM {ApiToken._meta.db_table} WHERE id = %s", [token.pk])
    assert _auth(raw).pk == user.pk  # within TOKEN_CACHE_SECONDS
    monkeypatch.setattr(auth, "TOKEN_CACHE_SECONDS", 0.0)
    assert _refused(raw)
    assert _refused("pgw_never_issued")
