"""manage.py import_chain FILE [--format F] [--owner USER] [--title T]: a transcript becomes a new flow."""
from __future__ import annotations

from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from flows.engine import FORMATS, FormatError
from flows.ingest import AppendError, chain_import
from flows.management.background import background_start


class Command(BaseCommand):
    help = "Import an OpenAI chat JSON, PentAGI msgchain JSON or OpenClaw/pi JSONL file as a new flow."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path)
        parser.add_argument("--format", choices=FORMATS, default=None, help="default: detected from the file")
        parser.add_argument("--owner", default=None, help="username (default: the first superuser)")
        parser.add_argument("--title", default="")
        parser.add_argument("--agent-type", default="primary_agent")
        parser.add_argument("--profile", default="agent", choices=["agent", "assistant"])

    def _owner(self, username: str | None):
        users = get_user_model().objects
        owner = users.filter(username=username).first() if username else \
            users.filter(is_superuser=True).order_by("pk").first()
        if owner is None:
            raise CommandError(f"no user {username!r}" if username else "no superuser; pass --owner USERNAME")
        return owner

    def handle(self, *args, **opts) -> None:
        path: Path = opts["file"]
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc.strerror}") from None
        owner = self._owner(opts["owner"])
        # A running server summarizes the import now; without one, `manage.py run` does when it starts.
        background = background_start(self, want_worker=False)
        try:
            chain = chain_import(owner=owner, data=data, fmt=opts["format"], title=opts["title"] or path.name,
                                 agent_type=opts["agent_type"], profile=opts["profile"])
        except (FormatError, AppendError, ValueError) as exc:
            raise CommandError(f"{path}: {exc}") from None
        finally:
            background.stop()
        self.stdout.write(f"imported {chain.last_seq} messages: flow {chain.agent.flow_id}, chain {chain.pk}")
