"""`manage.py demo`: play the built-in demo agent in the foreground (Ctrl-C stops it after the current turn).

With a `manage.py run` serving on this machine the agent's model calls go through that server's gateway
(`/v1/chat/completions`) to a scripted model in this process, reached through a provider named after this
process (removed when it ends); without one the messages are written directly.

Views are computed by whatever worker is running: with REDIS_URL set, `manage.py run` or `celery -A
pentagi_web worker`; without it, a running `manage.py run` on this machine (flows.core.relay: its worker and its
browsers get everything live), else a worker this command embeds so summaries still happen.
"""
from __future__ import annotations

import os
import threading
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from flows.config import provider_endpoint_remove
from flows.demo import DEMO_MAX_CAMPAIGNS, ModelTurns, demo_create, demo_run, gateway_turns
from flows.ingest import user_ensure
from flows.management.background import Background, background_start
from flows.models import Chain


def owner_for(command: BaseCommand, username: str):
    """The user who owns the flow; created (password printed once) when missing."""
    user, password = user_ensure(username=username)
    if password is not None:
        command.stdout.write(command.style.WARNING(
            f"created user '{username}' with password '{password}' (shown once)"))
    return user


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
        background = background_start(self, want_worker=not no_worker)
        user = owner_for(self, owner)
        flow, chain = demo_create(owner=user)
        self.stdout.write(f"demo flow #{flow.pk} ({flow.title}): open /chains/{chain.pk}/")
        provider = f"demo-{os.getpid()}"
        stop = threading.Event()
        try:
            turns = self._turns(background, user, chain, provider)
            count = demo_run(flow=flow, chain=chain, speed=speed, stop=stop, campaigns=campaigns, turns=turns)
        except KeyboardInterrupt:
            stop.set()
            self.stdout.write("stopped")
            return
        finally:
            provider_endpoint_remove(name=provider)
            background.stop()
        self.stdout.write(self.style.SUCCESS(f"demo finished: {count} messages in chain #{chain.pk}"))

    def _turns(self, background: Background, user: Any, chain: Chain, provider: str) -> ModelTurns | None:
        if background.relay is None:
            return None  # no server to call: demo_run writes the messages itself
        self.stdout.write(f"the demo's model calls go through {background.relay.url}/v1/chat/completions")
        return gateway_turns(owner=user, chain=chain, server=background.relay.url, provider=provider)
