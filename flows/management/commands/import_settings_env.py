"""manage.py import_settings_env [--file .env]: PentAGI's SUMMARIZER_* / ASSISTANT_SUMMARIZER_* and our
COMPACTION_* / ASSISTANT_COMPACTION_* variables (from the environment, or a .env file) into the settings defaults,
with change history. Each variable is checked on its own: good ones are saved, each bad one is named on stderr
and the command then exits with status 1."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from flows.config import parse_env_text, settings_import_env


class Command(BaseCommand):
    help = "Apply summarizer settings from environment variables (or a .env file) to both profiles' defaults."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--file", type=Path, default=None, help="a .env file instead of the environment")

    def handle(self, *args: Any, **opts: Any) -> None:
        if opts["file"] is not None:
            try:
                environ = parse_env_text(opts["file"].read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError) as exc:
                raise CommandError(f"cannot read {opts['file']}: {exc}") from None
        else:
            environ = dict(os.environ)
        report = settings_import_env(environ)
        for profile, changes in report.applied.items():
            summary = ", ".join(f"{k}={v[1]!r}" for k, v in changes.items()) or "no changes"
            self.stdout.write(f"{profile}: {summary}")
        for message in report.rejected.values():
            self.stderr.write(f"refused {message}")
        if report.rejected:
            # The good variables are saved; a non-zero status still tells scripts that some were refused.
            raise CommandError(f"{len(report.rejected)} variable(s) refused, the others were imported: "
                               + ", ".join(report.rejected))
