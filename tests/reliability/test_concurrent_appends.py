"""Concurrent appenders on one chain (threads with their own database connections, committed data): seqs stay
contiguous, every batch is stored whole and once, batches never interleave. Runs on the test command's database:
SQLite, and PostgreSQL in the test command's PostgreSQL pass."""
from __future__ import annotations

import threading
from collections import defaultdict

import pytest
from django.db import connections

from flows.ingest import AppendError, chain_append
from flows.models import Message
from tests.reliability.invariants import assert_chain_intact

pytestmark = pytest.mark.django_db(transaction=True)

WRITERS = 4
BATCHES_PER_WRITER = 8


def _batch(writer: int, n: int) -> list[dict]:
    """A user message and an answer: complete on its own, so any interleaving of whole batches is valid."""
    return [{"role": "user", "content": f"w{writer} b{n} ask"}, {"role": "assistant", "content": f"w{writer} b{n} ok"}]


def _writer(chain_id: int, writer: int, start: threading.Barrier, errors: list[BaseException]) -> None:
    from flows.models.chains import Chain

    try:
        chain = Chain.objects.get(pk=chain_id)
        start.wait()
        for n in range(BATCHES_PER_WRITER):
            chain_append(chain=chain, messages=_batch(writer, n))
    except BaseException as exc:  # noqa: BLE001 - reported to the test thread
        errors.append(exc)
    finally:
        connections.close_all()


def test_concurrent_appenders_lose_nothing_and_keep_seq_contiguous(make_chain, monkeypatch):
    monkeypatch.setattr("flows.ingest.append.after_append", lambda *a, **k: None)  # no worker needed here
    chain = make_chain([{"role": "system", "content": "You are a pentester."}])
    start, errors = threading.Barrier(WRITERS), []
    threads = [threading.Thread(target=_writer, args=(chain.pk, w, start, errors)) for w in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    assert_chain_intact(chain)
    rows = list(Message.objects.filter(chain=chain).order_by("seq").values_list("seq", "content"))
    assert len(rows) == 1 + 2 * WRITERS * BATCHES_PER_WRITER
    seen: dict[str, list[int]] = defaultdict(list)
    for seq, content in rows[1:]:
        seen[content.rsplit(" ", 1)[0]].append(seq)
    assert len(seen) == WRITERS * BATCHES_PER_WRITER
    assert all(b - a == 1 for a, b in seen.values())  # each batch's two messages are adjacent: no interleaving


def test_a_refused_batch_between_concurrent_good_ones_leaves_no_trace(make_chain, monkeypatch):
    monkeypatch.setattr("flows.ingest.append.after_append", lambda *a, **k: None)
    chain = make_chain([{"role": "system", "content": "s"}])
    start, errors = threading.Barrier(3), []
    refused: list[AppendError] = []

    def bad() -> None:
        from flows.models.chains import Chain

        try:
            target = Chain.objects.get(pk=chain.pk)
            start.wait()
            for _ in range(BATCHES_PER_WRITER):
                try:
                    chain_append(chain=target, messages=[{"role": "user", "content": "ok"},
                                                         {"role": "tool", "tool_call_id": "nobody", "content": "x"}])
                except AppendError as exc:
                    refused.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=_writer, args=(chain.pk, w, start, errors)) for w in range(2)]
    threads.append(threading.Thread(target=bad))
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    assert len(refused) == BATCHES_PER_WRITER
    assert_chain_intact(chain)
    assert Message.objects.filter(chain=chain).count() == 1 + 2 * 2 * BATCHES_PER_WRITER
    assert not Message.objects.filter(chain=chain, role="tool").exists()
