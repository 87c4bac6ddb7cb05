"""`manage.py run`: the whole product on one machine (migrations, demo user, Celery worker, Daphne, demo).

Without REDIS_URL everything shares this process: the memory broker feeds a worker thread and the
in-memory channel layer carries its events to the browsers Daphne serves. Other processes on this machine
(`replay`, `import_chain`, `demo`) reach both through `/internal/relay/` (flows.core.relay), and chains written while
no server ran get their summarization queued at start. With REDIS_URL set, workers are
separate processes (`celery -A pentagi_web worker`), unless `--embedded-worker` asks for one in here too.
"""
from __future__ import annotations

import gc
import logging
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser

from flows.core import SUMMARIZE_CHAIN, enqueue, local_url, server_publish, server_unpublish
from flows.demo import demo_start
from flows.gateway import calls_abandoned_after_seconds, gateway_calls_close_interrupted
from flows.ingest import user_ensure
from flows.pipeline import abandoned_after_seconds, chains_behind_their_view, events_recover_interrupted

log = logging.getLogger(__name__)

REQUEST_BUFFER_BYTES = 1 << 20

DEMO_USERNAME = "demo"
CELERY_COMMAND = ".venv/bin/celery -A pentagi_web worker --loglevel=INFO"


class Command(BaseCommand):
    help = "Run pentagi-web: migrate, demo user, embedded Celery worker, Daphne (HTTP + WebSockets), demo flow."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1", help="interface to listen on (default 127.0.0.1)")
        parser.add_argument("--port", type=int, default=8000, help="port to listen on (default 8000)")
        parser.add_argument("--no-demo", action="store_true", help="do not start the built-in demo flow")
        parser.add_argument("--embedded-worker", action="store_true",
                            help="run a Celery worker in this process even when REDIS_URL is set")

    def handle(self, *args: Any, host: str, port: int, no_demo: bool, embedded_worker: bool, **options: Any) -> None:
        call_command("migrate", interactive=False, verbosity=0)
        user = self._ensure_demo_user()
        self._staff_hint()
        worker = self._start_worker(force=embedded_worker)
        self._close_interrupted_calls()
        if worker is not None:
            queued = self._recover_interrupted()  # first: interrupted runs are closed or re-queued
            self._catch_up(queued)  # then chains whose view is behind their raw messages (e.g. imported meanwhile)
        if not no_demo:
            self._start_demo(user, server=local_url(host, port))
        url = f"http://{host}:{port}/"
        if not settings.REDIS_URL:
            server_publish(host=host, port=port)
        self.stdout.write(self.style.SUCCESS(f"pentagi-web is listening on {url}"), ending="\n")
        self.stdout.flush()
        try:
            _serve(host=host, port=port)
        finally:
            server_unpublish()
            if worker is not None:
                worker.stop()

    def _catch_up(self, queued: tuple[int, ...]) -> None:
        """Summarize what was written while no worker ran (an import or replay without a server); the chains
        the recovery queued already are not queued twice."""
        behind = chains_behind_their_view(queued=queued)
        for chain_id in behind:
            enqueue(SUMMARIZE_CHAIN, chain_id)
        if behind:
            self.stdout.write(f"queued the summarization of {len(behind)} chain(s) written while no worker ran")

    def _ensure_demo_user(self):
        """Create the demo user once; its random password is printed once and only its hash is stored."""
        user, password = user_ensure(username=DEMO_USERNAME)
        if password is None:
            self.stdout.write(f"login: user '{DEMO_USERNAME}' (password printed when it was created; "
                              f"change it with `manage.py changepassword {DEMO_USERNAME}`)")
            return user
        self.stdout.write(self.style.WARNING(
            f"login: user '{DEMO_USERNAME}', password '{password}' (shown once; stored hashed)"))
        return user

    def _staff_hint(self) -> None:
        """`demo` is not staff: while no account is, say how to get one (providers, defaults, the admin)."""
        if not get_user_model().objects.filter(is_staff=True, is_active=True).exists():
            self.stdout.write("no staff account yet (needed for /providers/, the settings defaults and /admin/): "
                              "create one with `.venv/bin/python manage.py createsuperuser`")

    def _start_worker(self, *, force: bool):
        if settings.REDIS_URL and not force:
            self.stdout.write(f"REDIS_URL is set: start workers separately with `{CELERY_COMMAND}` "
                              "(or pass --embedded-worker)")
            return None
        from flows.pipeline import start_embedded_worker

        worker = start_embedded_worker()
        self.stdout.write(f"Celery worker running in-process (broker {_redacted(settings.CELERY_BROKER_URL)})")
        return worker

    def _recover_interrupted(self) -> tuple[int, ...]:
        """On the memory broker this worker is the only one: anything still running died with the previous
        process (with Redis, only runs older than twice the visibility timeout count as abandoned). Returns
        the chains queued for summarization."""
        recovered = events_recover_interrupted(older_than_seconds=abandoned_after_seconds())
        if recovered.requeued_compactions or recovered.closed_as_failed:
            self.stdout.write(f"after the last stop: {recovered}")
        return recovered.summarized

    def _close_interrupted_calls(self) -> None:
        """Gateway calls a stopped server left "running" (it died between an answer and its record)."""
        closed = gateway_calls_close_interrupted(older_than_seconds=calls_abandoned_after_seconds())
        if closed:
            self.stdout.write(f"after the last stop: {closed} interrupted gateway call(s) closed as failed")

    def _start_demo(self, user, *, server: str) -> None:
        """The demo agent calls this server's gateway (`/v1/chat/completions`), as a connected agent would."""
        try:
            flow = demo_start(owner=user, server=server)
        except Exception as exc:  # the product must still start when the demo can't
            log.exception("demo failed to start")
            self.stdout.write(f"demo failed to start: {exc}")
            return
        self.stdout.write(f"demo flow #{flow.pk} running: {flow.title}")


def _redacted(url: str) -> str:
    """Hide credentials in a broker URL before printing it."""
    if "@" in url:
        scheme, _, rest = url.partition("://")
        return f"{scheme}://***@{rest.rpartition('@')[2]}"
    return url


def _serve(*, host: str, port: int) -> None:
    """Run Daphne in this (main) thread until SIGINT/SIGTERM."""
    from daphne.endpoints import build_endpoint_description_strings
    from daphne.server import Server, twisted_loop

    from flows.core import bind_event_loop
    from pentagi_web.asgi import application

    bind_event_loop(twisted_loop)  # worker-thread broadcasts must reach the in-memory layer on this loop
    # What is loaded by now (Django, the summarizer, tiktoken's tables) lives as long as the process: kept out
    # of the collector's full passes, which otherwise walk it all again and again while a request waits.
    gc.freeze()
    try:
        Server(
            application=application,  # static files: WhiteNoise, in the middleware, as under plain Daphne
            endpoints=build_endpoint_description_strings(host=host, port=port),
            signal_handlers=True,
            verbosity=0,
            # The body reaches Django in one message instead of Daphne's default 8 KiB pieces (a gateway call
            # resends the agent's whole history; 2,000 messages are about 430 KB). MAX_REQUEST_BYTES still caps it.
            request_buffer_size=REQUEST_BUFFER_BYTES,
        ).run()
    finally:
        bind_event_loop(None)
