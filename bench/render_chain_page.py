"""Server-side render time of the chain page on a 5,000-message chain (median of N runs).

Builds the chain in a throw-away SQLite database (through the real services: append, then a summarized view
written by the pipeline's own records), then renders `/chains/{id}/` with Django's test client and prints the
median, min and max wall time, plus the page size. Usage:

    .venv/bin/python bench/render_chain_page.py [--messages 5000] [--runs 7]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ["PENTAGI_WEB_VAR_DIR"] = tempfile.mkdtemp(prefix="bench-render-")
os.environ.pop("DATABASE_URL", None)
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "pentagi_web.settings")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import setup_test_environment  # noqa: E402

BATCH_MESSAGES = 500


def build_chain(n_messages: int):
    """A pentest-shaped chain of n messages (demo campaigns repeated) and one view summarizing most of it."""
    import random

    from django.contrib.auth import get_user_model

    from flows.demo.script import demo_create, demo_turns
    from flows.ingest.append import chain_append
    from flows.ingest.replay import turn_batches
    from flows.models.chains import ChainView
    from flows.pipeline import tasks

    tasks.summarize_chain_task.delay = lambda *a, **k: None  # the bench measures rendering, not summarizing
    user = get_user_model().objects.create_user("bench", password="bench-password-1")
    flow, chain = demo_create(owner=user, title="Bench: 5,000 messages")
    rng, messages, first = random.Random(1), [], True
    while len(messages) < n_messages:
        for kind, batch in demo_turns(rng, "10.10.5.23", first=first):
            if kind == "append":
                messages.extend(batch)
        first = False
    messages = _cut_at_turn(messages, n_messages)
    for batch in _chunks(turn_batches(messages)):
        chain_append(chain=chain, messages=batch)
    chain.refresh_from_db()
    keep = messages[-40:]
    summary_call = {"id": "call_BENCHSUMMARYBENCHSUMMARY0", "type": "function",
                    "function": {"name": "execute_task_and_return_summary", "arguments": "{}"}}
    view = [messages[0], {"role": "assistant", "content": None, "tool_calls": [summary_call]},
            {"role": "tool", "tool_call_id": summary_call["id"], "name": "execute_task_and_return_summary",
             "content": "Earlier work summarized. " * 200}] + keep
    old = list(range(2, chain.last_seq - len(keep) + 1))
    lineage = [[1], old, old] + [[s] for s in range(chain.last_seq - len(keep) + 1, chain.last_seq + 1)]
    ChainView.objects.create(chain=chain, version=1, messages=view, lineage=lineage, raw_seq_to=chain.last_seq,
                             byte_size=60_000, token_count=15_000)
    return user, chain


def _cut_at_turn(messages, n):
    """At most n messages, ending where a batch boundary is valid (never inside a tool round)."""
    out = messages[:n]
    while out and out[-1]["role"] == "assistant" and out[-1].get("tool_calls"):
        out.pop()
    return out


def _chunks(batches):
    """Whole turns grouped into appends of about BATCH_MESSAGES messages (faster than one append per turn)."""
    chunk = []
    for batch in batches:
        chunk.extend(batch)
        if len(chunk) >= BATCH_MESSAGES:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    setup_test_environment()
    user, chain = build_chain(args.messages)
    client = Client()
    client.force_login(user)
    url = f"/chains/{chain.pk}/"
    for label, query in (("newest page", ""), ("first page", "?page=1"), ("text search", "?q=password")):
        client.get(url + query)  # warm caches (templates, tiktoken)
        times, size = [], 0
        for _ in range(args.runs):
            started = time.perf_counter()
            response = client.get(url + query)
            times.append((time.perf_counter() - started) * 1000)
            size = len(response.content)
            assert response.status_code == 200
        print(f"chain page, {chain.last_seq} messages, {label}: median {statistics.median(times):.0f} ms "
              f"(min {min(times):.0f}, max {max(times):.0f}, {args.runs} runs), {size / 1024:.0f} KB of HTML")


if __name__ == "__main__":
    main()
