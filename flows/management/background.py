"""Who does the background work for a command that writes chains (replay, import_chain, demo).

Order of preference: Redis (REDIS_URL: the existing workers and channel layer, nothing to do here); a running
`manage.py run` on this machine (flows.core.relay: its worker summarizes and its browsers see every event); else a
Celery worker embedded in the command itself, when the command wants one.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand

from flows.core import Relay, relay_connect, relay_install

__all__ = ["Background", "background_start"]


@dataclass
class Background:
    relay: Relay | None = None
    worker: Any = None  # flows.pipeline.embedded_worker.EmbeddedWorker

    def stop(self) -> None:
        if self.worker is not None:
            self.worker.stop()
        if self.relay is not None:
            relay_install(None)


def background_start(command: BaseCommand, *, want_worker: bool) -> Background:
    if settings.REDIS_URL:
        return Background()
    relay = relay_connect()
    if relay is not None:
        relay_install(relay)
        command.stdout.write(f"the server at {relay.url} is running: its worker summarizes and its browsers "
                             "see this live")
        return Background(relay=relay)
    if not want_worker:
        command.stdout.write("no server is running: chains are summarized when `manage.py run` starts")
        return Background()
    from flows.pipeline import start_embedded_worker

    command.stdout.write("no REDIS_URL and no running server: running a Celery worker in this process for summaries")
    return Background(worker=start_embedded_worker())
