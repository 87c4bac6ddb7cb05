"""manage.py import_settings_env [--file .env]: PentAGI's SUMMARIZER_* / ASSISTANT_SUMMARIZER_* / COMPACTION_*
variables (from the environment, or a .env file) into the settings defaults, with change history."""
from __future__ import annotations

import os
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from flows.services import settings_import_env
from flows.settings_registry import SettingsError, parse_env_text


class Command(BaseCommand):
    help = "Apply summarizer settings from environment variables (or a .env file) to both profiles' defaults."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--file", type=Path, default=None, help="a .env file instead of the environment")

    def handle(self, *args, **opts) -> None:
        if opts["file"] is not None:
            try:
                environ = parse_env_text(opts["file"].read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError) as exc:
                raise CommandError(f"cannot read {opts['file']}: {exc}") from None
        else:
            environ = dict(os.environ)
        try:
            applied = settings_import_env(environ)
        except SettingsError as exc:
            raise CommandError(f"nothing imported: {exc}") from None
        for profile, changes in applied.items():
            summary = ", ".join(f"{k}={v[1]!r}" for k, v in changes.items()) or "no changes"
            self.stdout.write(f"{profile}: {summary}")
