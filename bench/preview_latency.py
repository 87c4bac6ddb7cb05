"""Settings preview latency on the 351-message corpus chain (swe-pi-01.json): the request the page sends as
you type (`POST /settings/` with action=preview and `X-Partial: preview`), end to end through Django
(validation, the extractive summarizer, the window fit, the diff and the render of the section).

Imports the transcript into a throw-away SQLite database, summarizes it once with the pipeline (so there is a
current view to diff against), then times, with the per-process preview caches emptied where it says so:
- the first preview with no warm-up at all (cold: reads the chain, summarizes every section);
- the first preview right after the page opened (its warm-up still running) and once the warm-up is done;
- N previews with a varying `last_sec_bytes` (every value new), then values seen before;
- N previews each after the chain grew by one message (alternately a user and an assistant message).
Prints the load average: on a shared machine the figures only compare at a similar load. Usage:

    .venv/bin/python bench/preview_latency.py [--runs 20] [--file ../shared/corpus/swe-pi-01.json]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from django_env import django_bench_setup

ROOT = django_bench_setup("bench-preview-")

from django.core.management import call_command  # noqa: E402
from django.test import Client  # noqa: E402

DEFAULT_FILE = ROOT.parent / "shared" / "corpus" / "swe-pi-01.json"
READING_SECONDS = 0.5  # page opened, then the first change: a fast user (the warm-up is still running)


def build(path: Path) -> tuple[Client, int, int]:
    from django.contrib.auth import get_user_model

    from flows.ingest.importing import chain_import
    from flows.pipeline import tasks
    from flows.pipeline.summarization import chain_summarize

    tasks.summarize_chain_task.delay = lambda *a, **k: None  # summarized once below, synchronously
    user = get_user_model().objects.create_user("bench", password="bench-password-1")
    chain = chain_import(owner=user, data=path.read_bytes(), title=path.name)
    chain_summarize(chain_id=chain.pk)
    client = Client()
    client.force_login(user)
    return client, chain.pk, chain.agent.flow_id


def page_form() -> dict[str, str]:
    """What the browser submits: every field, a checkbox only when on."""
    from flows.config.registry import settings_for, settings_values
    from flows.core.settings_spec import SETTINGS_FIELDS

    values = settings_values(settings_for(profile="agent"))
    return {s.name: "on" if s.kind == "bool" else ("" if values[s.name] is None else str(values[s.name]))
            for s in SETTINGS_FIELDS if s.kind != "bool" or values[s.name]}


def grow(chain_id: int, i: int) -> None:
    """One more message at the end of the chain, as a live agent would add it."""
    from flows.ingest.append import chain_append
    from flows.models.chains import Chain

    message = ({"role": "user", "content": f"Step {i}: run the test suite again and report."} if i % 2 == 0
               else {"role": "assistant", "content": f"Step {i}: the suite passes; 3 warnings remain."})
    chain_append(chain=Chain.objects.get(pk=chain_id), messages=[message])


def report(label: str, times: list[float]) -> None:
    times = sorted(times)
    if len(times) == 1:
        print(f"  {label}: {times[0]:.0f} ms")
        return
    p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
    print(f"  {label} ({len(times)}): p50 {statistics.median(times):.0f} ms, p95 {p95:.0f} ms, "
          f"max {times[-1]:.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--file", type=Path, default=DEFAULT_FILE)
    args = parser.parse_args()
    if not args.file.exists():
        sys.exit(f"{args.file} not found (the shared corpus)")
    call_command("migrate", verbosity=0)
    client, chain_id, flow_id = build(args.file)
    from flows.pipeline.preview_cache import preview_caches_clear
    from flows.pipeline.preview_warm import preview_warm_wait

    form = page_form()

    def timed(last_sec_bytes: int) -> float:
        data = {**form, "profile": "agent", "flow": flow_id, "chain": chain_id, "action": "preview",
                "last_sec_bytes": str(last_sec_bytes)}
        started = time.perf_counter()
        response = client.post("/settings/", data, HTTP_X_PARTIAL="preview")
        elapsed = (time.perf_counter() - started) * 1000
        assert response.status_code == 200, response.content[:300]
        return elapsed

    def after_page_open(wait: Callable[[], object]) -> float:
        preview_caches_clear()
        assert client.get(f"/settings/?profile=agent&chain={chain_id}").status_code == 200  # starts the warm-up
        wait()
        return timed(8192)  # the first change a user makes

    print(f"{args.file.name} (load average {' '.join(f'{x:.2f}' for x in os.getloadavg())})")
    preview_caches_clear()
    report("first preview, no warm-up (cold)", [timed(8192)])
    report(f"first preview {READING_SECONDS} s after the page opened", [after_page_open(
        lambda: time.sleep(READING_SECONDS))])
    report("first preview once the page's warm-up is done", [after_page_open(preview_warm_wait)])
    report("as you type (every value new)", [timed(8192 + 37 * i) for i in range(1, args.runs + 1)])
    report("back to values seen before", [timed(8192 + 37 * (i % 4)) for i in range(args.runs)])
    grown = []
    for i in range(args.runs):
        grow(chain_id, i)
        grown.append(timed(8192))
    report("after the chain grew by one message", grown)
    print(f"  (load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())})")


if __name__ == "__main__":
    main()
