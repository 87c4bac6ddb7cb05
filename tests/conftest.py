"""Shared test configuration: hypothesis profiles, the shared corpus, Django async safety for browsers."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

# Playwright's sync API runs an event loop; Django would otherwise refuse ORM calls made from those tests.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")



def pytest_configure(config: pytest.Config) -> None:
    """No sweeper thread in the test process (pentagi_web/asgi.py starts one on import): tests run the sweep
    themselves, with an injected clock. Servers a test starts keep theirs (and the summary delay)."""
    from django.conf import settings as django_settings

    django_settings.SWEEP_INTERVAL_SECONDS = 0
    # A turn's summarization is published without a countdown here (the tests that patch a task's `delay` see
    # it); tests of the countdown set it themselves.
    django_settings.SUMMARY_DELAY_SECONDS = 0


settings.register_profile("dev", max_examples=60, deadline=None)
settings.register_profile("ci", max_examples=120, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

# The Django app's fixtures, for every test package that needs them (one copy, no per-package conftest).
pytest_plugins = ["tests.app_fixtures"]

ROOT = Path(__file__).resolve().parent.parent
CORPUS_DIR = Path(os.environ.get("PENTAGI_CORPUS_DIR", ROOT.parent / "shared" / "corpus"))


def corpus_files() -> list[Path]:
    return sorted(CORPUS_DIR.glob("*.json")) if CORPUS_DIR.is_dir() else []


def load_corpus(path: Path) -> list[dict[str, Any]]:
    return json.loads(path.read_text(encoding="utf-8"))["messages"]


def corpus_params() -> list[Any]:
    """pytest params over the shared corpus; one clean skip where ../shared is absent."""
    files = corpus_files()
    if not files:
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"shared corpus not found at {CORPUS_DIR}"))]
    return [pytest.param(p, id=p.stem) for p in files]


@pytest.fixture(autouse=True)
def fresh_django_cache():
    """The cache holds login-failure counts: one test's failed logins must not lock out the next test."""
    yield
    from django.apps import apps

    if apps.ready:
        from django.core.cache import cache

        cache.clear()
