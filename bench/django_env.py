"""Set up Django for a bench script: the repository on sys.path, a throw-away var dir (SQLite unless told otherwise)."""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


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
