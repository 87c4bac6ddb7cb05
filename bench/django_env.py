"""Set up Django for a bench script: the repository on sys.path, a throw-away var dir (SQLite unless told otherwise)."""
from __future__ import annotations

import os
import secrets
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PG_ADMIN_URL = os.environ.get("BENCH_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres")


def django_bench_setup(prefix: str, database_url: str | None = None) -> Path:
    """Call before importing anything that needs Django settings; returns the repository root. The database is
    SQLite in the throw-away var dir unless `database_url` names another."""
    sys.path.insert(0, str(ROOT))
    os.environ["PENTAGI_WEB_VAR_DIR"] = tempfile.mkdtemp(prefix=prefix)
    os.environ.pop("DATABASE_URL", None)
    if database_url:
        os.environ["DATABASE_URL"] = database_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "pentagi_web.settings")
    import django

    django.setup()
    return ROOT


def _pg_admin(sql: str) -> None:
    import psycopg

    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        conn.execute(sql)


@contextmanager
def bench_database(prefix: str, *, postgres: bool) -> Iterator[str]:
    """Django set up (`django_bench_setup`) on a migrated throw-away database, SQLite or, with `postgres`, a fresh
    database on BENCH_POSTGRES_URL's server, dropped on the way out; yields the vendor's name."""
    name = f"pentagi_{prefix.strip('-').replace('-', '_')}_{os.getpid()}_{secrets.token_hex(3)}" if postgres else ""
    if name:
        _pg_admin(f'CREATE DATABASE "{name}"')
    django_bench_setup(prefix, database_url=PG_ADMIN_URL.rsplit("/", 1)[0] + "/" + name if name else None)
    from django.core.management import call_command
    from django.db import connections

    try:
        call_command("migrate", verbosity=0)
        yield "postgres" if name else "sqlite"
    finally:
        if name:
            connections.close_all()
            _pg_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
