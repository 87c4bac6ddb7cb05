"""Set up Django for a bench script: the repository on sys.path, a throw-away var dir (SQLite), no DATABASE_URL."""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def django_bench_setup(prefix: str) -> Path:
    """Call before importing anything that needs Django settings; returns the repository root."""
    sys.path.insert(0, str(ROOT))
    os.environ["PENTAGI_WEB_VAR_DIR"] = tempfile.mkdtemp(prefix=prefix)
    os.environ.pop("DATABASE_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "pentagi_web.settings")
    import django

    django.setup()
    return ROOT
