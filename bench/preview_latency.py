"""Settings preview latency on the 351-message corpus chain (swe-pi-01.json): p50 and p95 of the request the
page sends as you type (`POST /settings/` with action=preview and `X-Partial: preview`), end to end through
Django (validation, the extractive summarizer, the window fit, the diff and the render of the section).

Imports the transcript into a throw-away SQLite database, summarizes it once with the pipeline (so there is a
current view to diff against), then times N previews with a varying `last_sec_bytes`. Usage:

    .venv/bin/python bench/preview_latency.py [--runs 20] [--file ../shared/corpus/swe-pi-01.json]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from django_env import django_bench_setup

ROOT = django_bench_setup("bench-preview-")

from django.core.management import call_command  # noqa: E402
from django.test import Client  # noqa: E402

DEFAULT_FILE = ROOT.parent / "shared" / "corpus" / "swe-pi-01.json"


def build(path: Path) -> tuple[Client, int, int]:
    from django.contrib.auth import get_user_model

    from flows import tasks
    from flows.services import chain_import
    from flows.services.views import chain_summarize

    tasks.summarize_chain_task.delay = lambda *a, **k: None  # summarized once below, synchronously
    user = get_user_model().objects.create_user("bench", password="bench-password-1")
    chain = chain_import(owner=user, data=path.read_bytes(), title=path.name)
    chain_summarize(chain_id=chain.pk)
    client = Client()
    client.force_login(user)
    return client, chain.pk, chain.agent.flow_id


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--file", type=Path, default=DEFAULT_FILE)
    args = parser.parse_args()
    if not args.file.exists():
        sys.exit(f"{args.file} not found (the shared corpus)")
    call_command("migrate", verbosity=0)
    client, chain_id, flow_id = build(args.file)
    from flows.settings_registry import SETTINGS_FIELDS, settings_for, settings_values

    values = settings_values(settings_for(profile="agent"))
    # What the browser submits: every field, a checkbox only when on.
    form = {s.name: "on" if s.kind == "bool" else ("" if values[s.name] is None else str(values[s.name]))
            for s in SETTINGS_FIELDS if s.kind != "bool" or values[s.name]}
    def timed(last_sec_bytes: int) -> float:
        data = {**form, "profile": "agent", "flow": flow_id, "chain": chain_id, "action": "preview",
                "last_sec_bytes": str(last_sec_bytes)}
        started = time.perf_counter()
        response = client.post("/settings/", data, HTTP_X_PARTIAL="preview")
        elapsed = (time.perf_counter() - started) * 1000
        assert response.status_code == 200, response.content[:300]
        return elapsed

    first = timed(50 * 1024)  # the page's first preview: reads, converts and tokenizes the chain
    # As you type, nearly every request carries a value not previewed before: all distinct here.
    typing = sorted(timed(8192 + 37 * i) for i in range(args.runs))
    again = sorted(timed(8192 + 37 * (i % 4)) for i in range(args.runs))  # back to values seen before
    print(f"{args.file.name}: first preview {first:.0f} ms")
    for label, times in (("new values", typing), ("repeated values", again)):
        p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
        print(f"  {len(times)} previews, {label}: p50 {statistics.median(times):.0f} ms, p95 {p95:.0f} ms, "
              f"max {times[-1]:.0f} ms")


if __name__ == "__main__":
    main()
