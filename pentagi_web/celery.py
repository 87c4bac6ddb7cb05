"""The Celery app: configured from Django settings (CELERY_* names), tasks discovered in installed apps.

A worker process starting runs `flows.pipeline.tasks.recover_interrupted_runs` (connected to `worker_ready`)."""
from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "pentagi_web.settings")

app = Celery("pentagi_web")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
