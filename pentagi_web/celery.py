"""The Celery app: configured from Django settings (CELERY_* names), tasks discovered in installed apps."""
from __future__ import annotations

import logging
import os
from typing import Any

from celery import Celery
from celery.signals import worker_ready

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "pentagi_web.settings")
log = logging.getLogger("flows.recovery")

app = Celery("pentagi_web")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_ready.connect
def recover_interrupted_runs(**kwargs: Any) -> None:
    """A worker process starting (the embedded one is handled by `manage.py run`): runs crashed workers left
    RUNNING with no task left to finish them are queued again or closed (flows.services.recovery)."""
    from flows.services.recovery import abandoned_after_seconds, events_recover_interrupted

    recovered = events_recover_interrupted(older_than_seconds=abandoned_after_seconds())
    if recovered.requeued_compactions or recovered.closed_as_failed:
        log.warning("after the last stop: %s", recovered)
