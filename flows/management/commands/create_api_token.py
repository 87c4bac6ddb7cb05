"""manage.py create_api_token USERNAME [--name N]: issue a bearer token for an agent (shown once)."""
from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from flows.ingest import api_token_create


class Command(BaseCommand):
    help = "Issue an API token for USERNAME. Only its hash is stored: copy it now."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--name", default="agent")

    def handle(self, *args, **opts) -> None:
        user = get_user_model().objects.filter(username=opts["username"]).first()
        if user is None:
            raise CommandError(f"no user {opts['username']!r}")
        token, raw = api_token_create(user=user, name=opts["name"])
        self.stdout.write(raw)
        self.stderr.write(f"token {token.prefix}… for {user.get_username()} ({token.name}); use "
                          f"'Authorization: Bearer <token>'")
