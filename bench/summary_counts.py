"""What the worker's after-turn summarization costs, in deterministic counts: Python calls per run.

`bench/append_counts.py` counts the append; this counts the other half of an append's CPU, the run the turns
queue (`summarize_chain_task`, as the Celery worker runs it, with the offline summarizer of a flow without a
provider). The agent turns of bench/server_load.py's `agent_turn` are appended to one chain through the service
(`chain_append`) and the task runs after every K turns, as a worker that coalesces K turns per run would. Counted
on every thread (the summarizer's batch threads too): Python function calls per run; also printed: CPU ms per run
and per appended message (this process; noisy on a busy machine, the calls are not) and a digest of the final view
(the summarizer's output, which a change of cost must leave as it was).

Usage: .venv/bin/python bench/summary_counts.py [--turns 300] [--every 50] [--postgres]
       (--postgres: a throwaway database on BENCH_POSTGRES_URL's server, default postgres://postgres@127.0.0.1:5432)
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from django_env import bench_database  # noqa: E402
from server_load import agent_turn  # noqa: E402


class CallCounter:
    def __init__(self) -> None:
        self.calls = 0

    def profile(self, frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            self.calls += 1  # the GIL makes this increment safe enough for a count


def _run(turns: int, every: int, counter: CallCounter | None) -> tuple[float, int, str]:
    """(CPU seconds in the runs, runs, digest of the final view) of one chain; calls counted when `counter`."""
    from django.contrib.auth import get_user_model

    from flows.ingest import agent_create, chain_append, flow_create
    from flows.models import ChainView
    from flows.pipeline.tasks import summarize_chain_task

    user = get_user_model().objects.get_or_create(username="bench")[0]
    chain = agent_create(flow=flow_create(owner=user, title="summary counts"), agent_type="pentester").chains.get()
    cpu, runs = 0.0, 0
    for n in range(turns):
        chain_append(chain=chain.pk, messages=agent_turn(n, first=n == 0))
        if (n + 1) % every:
            continue
        if counter is not None:
            threading.setprofile(counter.profile)
            sys.setprofile(counter.profile)
        began = time.process_time()
        try:
            summarize_chain_task(chain.pk)
        finally:
            cpu += time.process_time() - began
            sys.setprofile(None)
            threading.setprofile(None)  # type: ignore[arg-type]
        runs += 1
    view = ChainView.objects.filter(chain=chain).order_by("-version").first()
    digest = hashlib.sha256(json.dumps([view.messages, view.lineage] if view else [], sort_keys=True).encode())
    return cpu, runs, digest.hexdigest()[:12]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=300, help="4-message agent turns appended (default 300)")
    parser.add_argument("--every", type=int, default=50, help="turns per summarization run (default 50)")
    parser.add_argument("--postgres", action="store_true", help="a throwaway PostgreSQL database instead of SQLite")
    args = parser.parse_args()
    os.environ["LOG_LEVEL"] = "WARNING"
    with bench_database("summary-counts-", postgres=args.postgres) as vendor:
        cpu, runs, digest = _run(args.turns, args.every, None)
        counter = CallCounter()
        _, _, counted_digest = _run(args.turns, args.every, counter)
    if not runs:
        raise SystemExit("no run: --every is larger than --turns")
    print("| database | turns | turns per run | runs | Python calls per run | CPU ms per run | CPU ms per message "
          "| final view |\n|---|---:|---:|---:|---:|---:|---:|---|\n"
          f"| {vendor} | {args.turns} | {args.every} | {runs} "
          f"| {counter.calls / runs:,.0f} | {cpu * 1000 / runs:.1f} | {cpu * 1000 / (args.turns * 4):.3f} "
          f"| {digest}{'' if digest == counted_digest else ' (differs when counted!)'} |")


if __name__ == "__main__":
    main()
