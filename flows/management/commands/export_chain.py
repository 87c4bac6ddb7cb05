"""manage.py export_chain CHAIN_ID [--format F] [--output FILE]: a stored raw chain in a transcript format."""
from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from flows.engine import FORMATS, export_chain
from flows.models import Chain


class Command(BaseCommand):
    help = "Write a chain's raw messages as OpenAI JSON, PentAGI msgchain JSON or OpenClaw/pi JSONL."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("chain_id", type=int)
        parser.add_argument("--format", choices=FORMATS, default="openai")
        parser.add_argument("--output", type=Path, default=None, help="default: standard output")

    def handle(self, *args, **opts) -> None:
        chain = Chain.objects.filter(pk=opts["chain_id"]).first()
        if chain is None:
            raise CommandError(f"no chain {opts['chain_id']}")
        data = export_chain(chain.raw_messages(), opts["format"])
        text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, indent=1) + "\n"
        if opts["output"] is None:
            self.stdout.write(text, ending="")
        else:
            opts["output"].write_text(text, encoding="utf-8")
            self.stderr.write(f"wrote chain {chain.pk} ({chain.last_seq} messages) to {opts['output']}")
