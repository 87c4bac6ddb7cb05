"""`manage.py replay FILE [--speed X] [--owner USER]`: replay a transcript live, turn by turn.

Any format `summarizer.import_chain` reads works (OpenAI JSON, PentAGI msgchain, OpenClaw JSONL).
A running `manage.py run` gets every event and summarization live (flows.core.relay); without one, a worker
embedded here summarizes. Restarting the same replay resumes it: the flow is found by title and owner, and
messages already stored (by seq) are skipped, after checking the stored ones are the file's own.
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from flows.engine import FormatError, import_chain
from flows.ingest import AppendError, agent_create, chain_append, flow_create, turn_batches
from flows.management.background import background_start
from flows.management.commands.demo import owner_for
from flows.models import Chain, Flow, Message

TURN_SECONDS = 1.0  # pause between batches at speed 1


def read_transcript(path: Path) -> list[dict[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc}") from None
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError:
        data = text  # JSONL formats are passed as text
    if isinstance(data, dict) and "messages" in data and "source" in data:
        data = data["messages"]  # the shared corpus wraps OpenAI messages with provenance
    try:
        return import_chain(data)
    except FormatError as exc:
        raise CommandError(f"{path}: {exc}") from None


def resume_chain(*, owner, title: str, model: str, new: bool) -> Chain:
    flow = None if new else Flow.objects.filter(owner=owner, title=title).order_by("-id").first()
    if flow is None:
        flow = flow_create(owner=owner, title=title, model_name=model)
        return agent_create(flow=flow, agent_type="pentester").chains.get(is_active=True)
    chain = Chain.objects.filter(agent__flow=flow, is_active=True).order_by("id").first()
    if chain is None:
        raise CommandError(f"flow #{flow.pk} has no active chain; pass --new")
    return chain


def stored_prefix_matches(chain: Chain, messages: list[dict[str, Any]]) -> bool:
    """The stored messages are the file's first ones (roles and tool call ids agree seq by seq)."""
    if chain.last_seq > len(messages):
        return False
    stored = Message.objects.filter(chain=chain).order_by("seq").values_list("role", "tool_call_id")
    return all(role == messages[i]["role"] and tid == (messages[i].get("tool_call_id") or "")
               for i, (role, tid) in enumerate(stored))


class Command(BaseCommand):
    help = "Replay a transcript into a flow, turn by turn, as if an agent were writing it live."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path)
        parser.add_argument("--speed", type=float, default=1.0, help="pace multiplier (0 = as fast as possible)")
        parser.add_argument("--owner", default="demo", help="username owning the flow (created if missing)")
        parser.add_argument("--title", default="", help="flow title (default: 'Replay: <file name>')")
        parser.add_argument("--model", default="", help="model name of the flow (decides the window)")
        parser.add_argument("--new", action="store_true", help="start a new flow instead of resuming")
        parser.add_argument("--no-worker", action="store_true", help="never embed a Celery worker")

    def handle(self, *args: Any, file: Path, speed: float, owner: str, title: str, model: str, new: bool,
               no_worker: bool, **options: Any) -> None:
        if speed < 0:
            raise CommandError("--speed must be 0 or more")
        messages = read_transcript(file)
        if not messages:
            raise CommandError(f"{file}: no messages")
        chain = resume_chain(owner=owner_for(self, owner), title=title or f"Replay: {file.name}", model=model, new=new)
        if not stored_prefix_matches(chain, messages):
            raise CommandError(f"chain #{chain.pk} holds other messages than {file.name}; pass --new")
        background = background_start(self, want_worker=not no_worker)
        try:
            self._replay(chain, messages, speed)
        finally:
            background.stop()

    def _replay(self, chain: Chain, messages: list[dict[str, Any]], speed: float) -> None:
        done = chain.last_seq
        if done:
            self.stdout.write(f"resuming chain #{chain.pk} after seq {done}")
        pause = TURN_SECONDS / speed if speed else 0.0
        self.stdout.write(f"replaying {len(messages) - done} of {len(messages)} messages into chain #{chain.pk}")
        for batch in turn_batches(messages[done:]) if done < len(messages) else []:
            try:
                result = chain_append(chain=chain, messages=batch)
            except AppendError as exc:
                raise CommandError(f"stopped at seq {chain.last_seq + 1}: {exc}") from None
            chain.last_seq = result.last_seq
            if pause:
                time.sleep(pause)
        self.stdout.write(self.style.SUCCESS(f"chain #{chain.pk} holds {chain.last_seq} messages"))
