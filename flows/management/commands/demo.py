"""`manage.py demo`: play the built-in demo agent in the foreground (Ctrl-C stops it after the current turn).

Views are computed by whatever worker is running: with REDIS_URL set, `manage.py run` or `celery -A
pentagi_web worker`; without it, this command embeds a worker so summaries still happen. Browsers watch live
through `manage.py run` (live events cross processes only through Redis; otherwise refresh the page).
"""
from __future__ import annotations

import threading
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from flows.demo import DEMO_MAX_CAMPAIGNS, demo_create, demo_run
from flows.services import user_ensure


def owner_for(command: BaseCommand, username: str):
    """The user who owns the flow; created (password printed once) when missing."""
    user, password = user_ensure(username=username)
    if password is not None:
        command.stdout.write(command.style.WARNING(
            f"created user '{username}' with password '{password}' (shown once)"))
    return user


def embedded_worker(command: BaseCommand):
    """An in-process Celery worker when no Redis broker is configured (else the running workers do the work)."""
    if settings.REDIS_URL:
        return None
    from flows.embedded_worker import start_embedded_worker

    command.stdout.write("no REDIS_URL: running a Celery worker in this process for summaries")
    return start_embedded_worker()


class Command(BaseCommand):
    help = "Run the built-in demo pentest agent in the foreground, writing a realistic chain turn by turn."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--owner", default="demo", help="username owning the demo flow (created if missing)")
        parser.add_argument("--speed", type=float, default=1.0, help="turn pace multiplier (2 = twice as fast)")
        parser.add_argument("--campaigns", type=int, default=DEMO_MAX_CAMPAIGNS,
                            help="number of lab hosts to attack in turn before finishing")
        parser.add_argument("--no-worker", action="store_true", help="never embed a Celery worker")

    def handle(self, *args: Any, owner: str, speed: float, campaigns: int, no_worker: bool, **options: Any) -> None:
        if speed <= 0 or campaigns <= 0:
            raise CommandError("--speed and --campaigns must be positive")
        worker = None if no_worker else embedded_worker(self)
        flow, chain = demo_create(owner=owner_for(self, owner))
        self.stdout.write(f"demo flow #{flow.pk} ({flow.title}): open /chains/{chain.pk}/")
        stop = threading.Event()
        try:
            count = demo_run(flow=flow, chain=chain, speed=speed, stop=stop, campaigns=campaigns)
        except KeyboardInterrupt:
            stop.set()
            self.stdout.write("stopped")
            return
        finally:
            if worker is not None:
                worker.stop()
        self.stdout.write(self.style.SUCCESS(f"demo finished: {count} messages in chain #{chain.pk}"))
