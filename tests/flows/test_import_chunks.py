"""A large import does not hold SQLite's write lock for its whole length, and stays all or nothing."""
from __future__ import annotations

import threading
import time

import pytest
from django.db import connections

from flows.ingest import chain_append, chain_import, importing
from flows.models import Flow, Message

MESSAGES = 12_000


def _transcript(rounds: int) -> list[dict]:
    messages = [{"role": "system", "content": "You are a pentester."}]
    for n in range(rounds):
        call_id = f"call_{n:024d}"
        messages += [{"role": "user", "content": f"scan 10.0.{n % 250}.1"},
                     {"role": "assistant", "content": None, "tool_calls": [{"id": call_id, "type": "function",
                      "function": {"name": "terminal", "arguments": '{"input": "nmap -sV"}'}}]},
                     {"role": "tool", "tool_call_id": call_id, "content": "22/tcp open ssh OpenSSH 8.9 " * 10},
                     {"role": "assistant", "content": f"host {n} has ssh"}]
    return messages


@pytest.mark.django_db(transaction=True)
def test_an_append_elsewhere_is_not_blocked_by_a_running_import(user, make_chain, tool_round, monkeypatch):
    other = make_chain(tool_round[:2])
    finished: dict[str, float] = {}
    measuring = threading.Event()
    real_build_rows = importing.build_rows

    def build_rows(*args, **kwargs):
        measuring.set()  # the import has parsed and validated; rows are being measured (the slow part)
        return real_build_rows(*args, **kwargs)

    monkeypatch.setattr(importing, "build_rows", build_rows)

    def run_import() -> None:
        try:
            chain_import(owner=user, data={"messages": _transcript(MESSAGES // 4)}, fmt="openai")
            finished["import"] = time.monotonic()
        finally:
            connections.close_all()

    importer = threading.Thread(target=run_import)
    importer.start()
    assert measuring.wait(timeout=120)
    time.sleep(0.2)
    started = time.monotonic()
    chain_append(chain=other, messages=[{"role": "assistant", "content": "noted"}])
    finished["append"] = time.monotonic()
    importer.join(timeout=300)
    assert "import" in finished, "the import did not finish"
    print(f"\nIMPORT-LOCK append waited {finished['append'] - started:.2f} s; "
          f"import ended {finished['import'] - started:.2f} s after the append started")
    waited, import_left = finished["append"] - started, finished["import"] - started
    assert waited < import_left / 2, (waited, import_left)  # a chunk's insert at most, not the whole import
    assert Message.objects.exclude(chain=other).count() == MESSAGES + 1


@pytest.mark.django_db(transaction=True)
def test_a_failure_between_chunks_leaves_nothing_behind(user, monkeypatch):
    monkeypatch.setattr(importing, "IMPORT_CHUNK_ROWS", 10)
    real_bulk_create, calls = Message.objects.bulk_create, []

    def failing_bulk_create(rows, *args, **kwargs):
        calls.append(len(rows))
        if len(calls) == 3:
            raise RuntimeError("disk full")
        return real_bulk_create(rows, *args, **kwargs)

    monkeypatch.setattr(Message.objects, "bulk_create", failing_bulk_create)
    with pytest.raises(RuntimeError, match="disk full"):
        chain_import(owner=user, data={"messages": _transcript(10)}, fmt="openai")
    assert calls[:2] == [10, 10]
    assert (Flow.objects.count(), Message.objects.count()) == (0, 0)
