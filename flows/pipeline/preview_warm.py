"""Warm the settings preview's caches in the background, so that the page's first preview is not the cold one.

The cold preview reads the whole chain and summarizes every section with the extractive summarizer (about
1.5 s on the 351-message corpus chain on an idle machine, ten times that under load); every later preview
answers from `preview_cache`. The settings page asks for a warm-up of its picked chain with the values it
shows, which are the values its first preview posts, so that preview finds every summary cached (or waits for
the one being computed: `preview_cache` is single-flight).

The caches are per process, so the warm-up must run in the process that serves the page: a daemon thread
here, never a Celery task (a worker in another process would warm its own caches). One thread, a few pending
jobs at most, and it starts after the request's transaction commits; nothing is saved.
"""
from __future__ import annotations

import json
import logging
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from django.db import connection, transaction

from flows.config import SettingsError
from flows.models import Chain
from flows.pipeline.preview import chain_preview

__all__ = ["MAX_PENDING_WARMUPS", "preview_warm", "preview_warm_later", "preview_warm_wait"]

log = logging.getLogger(__name__)

MAX_PENDING_WARMUPS = 4  # more asks at once (many tabs opened together) are dropped: warming is only a help

_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="preview-warm")
_pending: set[str] = set()
_pending_lock = threading.Lock()


def preview_warm(*, chain_id: int, settings: dict[str, Any]) -> bool:
    """Run the preview of `settings` on the chain once, filling the caches (synchronous; False: nothing to do)."""
    chain = Chain.objects.select_related("agent__flow").filter(pk=chain_id).first()
    if chain is None:
        return False
    try:
        chain_preview(chain=chain, settings=settings)
    except SettingsError:  # values the page would refuse: their preview is an error, nothing to warm
        return False
    return True


def _run(key: str, chain_id: int, settings: dict[str, Any]) -> None:
    try:
        preview_warm(chain_id=chain_id, settings=settings)
    except Exception:  # a failed warm-up only leaves the caches cold; the preview itself will report the error
        log.exception("preview warm-up of chain %s failed", chain_id)
    finally:
        with _pending_lock:
            _pending.discard(key)
        connection.close()  # this thread's own connection


def _submit(chain_id: int, settings: dict[str, Any]) -> Future[None] | None:
    key = f"{chain_id}:{json.dumps(settings, sort_keys=True, default=str)}"
    with _pending_lock:
        if key in _pending or len(_pending) >= MAX_PENDING_WARMUPS:
            return None
        _pending.add(key)
    return _executor.submit(_run, key, chain_id, settings)


def preview_warm_later(*, chain_id: int, settings: dict[str, Any]) -> None:
    """Warm the preview of `settings` on the chain in this process's warm-up thread, once the current
    transaction commits (at once outside one); the caller never waits for it."""
    values = dict(settings)
    transaction.on_commit(lambda: _submit(chain_id, values))


def preview_warm_wait(timeout: float | None = None) -> bool:
    """Block until the warm-ups asked for so far have run (for benchmarks and tests; True: all done)."""
    try:
        _executor.submit(lambda: None).result(timeout=timeout)  # one worker: runs after every earlier job
    except TimeoutError:
        return False
    return True
