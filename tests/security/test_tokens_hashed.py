"""API tokens are stored as hashes only: the raw value is shown once and found nowhere afterwards."""
from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.db import connection
from django.test import Client

from flows.ingest import api_token_create
from flows.models import ApiToken, hash_token

pytestmark = pytest.mark.django_db


def _database_text() -> str:
    """Every value of every row of every table, as one string (small test database)."""
    chunks = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names():
            cursor.execute(f'SELECT * FROM "{table}"')  # noqa: S608 - table names come from the database itself
            chunks.extend(str(value) for row in cursor.fetchall() for value in row)
    return "\n".join(chunks)


def test_the_raw_token_is_stored_nowhere(user):
    token, raw = api_token_create(user=user, name="agent")
    assert token.key_hash == hash_token(raw) != raw
    assert raw not in _database_text()
    assert raw[len(token.prefix):] not in _database_text()  # the stored prefix is not enough to rebuild it


def test_the_command_prints_a_working_token_once_and_stores_its_hash(user):
    out = io.StringIO()
    call_command("create_api_token", user.username, stdout=out, stderr=io.StringIO())
    raw = out.getvalue().strip().splitlines()[-1]
    assert raw not in _database_text()
    assert ApiToken.objects.filter(key_hash=hash_token(raw)).exists()
    assert Client(HTTP_AUTHORIZATION=f"Bearer {raw}").get("/api/flows").status_code == 200


def test_the_hash_itself_is_not_a_credential(user):
    token, _raw = api_token_create(user=user)
    assert Client(HTTP_AUTHORIZATION=f"Bearer {token.key_hash}").get("/api/flows").status_code == 401


def test_the_admin_never_shows_a_token_or_its_hash(user, staff_user):
    token, raw = api_token_create(user=user)
    admin = Client()
    admin.force_login(staff_user)
    for path in ("/admin/flows/apitoken/", f"/admin/flows/apitoken/{token.pk}/change/"):
        page = admin.get(path).content.decode()
        assert raw not in page and token.key_hash not in page
