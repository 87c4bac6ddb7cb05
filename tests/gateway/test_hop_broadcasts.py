"""The live events a gateway thread hop makes are sent by the server's loop once the hop returns, in order."""
from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from flows.core import BroadcastBatch, bind_event_loop, broadcast, broadcasts_batched
from flows.gateway import hops


class RecordingLayer:
    """A channel layer that notes which thread sent what (the in-memory layer must be fed on the server's loop)."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str, int]] = []

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        self.sent.append((threading.current_thread().name, group, message["last_seq"]))  # flows.core.layer_message


def _appended(chain_id: int, seq: int) -> None:
    broadcast(chain_id, {"type": "message.appended", "chain_id": chain_id, "messages": [], "last_seq": seq})


@pytest.fixture
def layer(monkeypatch: pytest.MonkeyPatch) -> Iterator[RecordingLayer]:
    """A recording layer, and a pool of fresh threads: a pool thread an earlier test left holding a database
    connection would have it checked after each hop, which these database-free tests may not do."""
    recording = RecordingLayer()
    monkeypatch.setattr("flows.core.events.get_channel_layer", lambda: recording)
    saved, hops._pool = hops._pool, None
    try:
        yield recording
    finally:
        if hops._pool is not None:
            hops._pool.shutdown(wait=True)
        hops._pool = saved


async def _wait_for(condition: Any, timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


def test_a_hops_broadcasts_are_sent_by_the_loop_after_the_hop_in_the_order_made(layer: RecordingLayer) -> None:
    def appends_three() -> str:
        for seq in (1, 2, 3):
            _appended(7, seq)
        assert layer.sent == []  # nothing reaches the loop while the hop works
        return "done"

    async def scenario() -> None:
        bind_event_loop(asyncio.get_running_loop())
        try:
            with hops.under_gateway_handler():
                assert await hops.run(appends_three) == "done"
            await _wait_for(lambda: len(layer.sent) == 3)
        finally:
            bind_event_loop(None)

    asyncio.run(scenario())
    assert [seq for *_, seq in layer.sent] == [1, 2, 3]
    assert {thread for thread, *_ in layer.sent} == {threading.main_thread().name}
    assert {group for _, group, _ in layer.sent} == {"chain-7"}


def test_a_hop_that_fails_still_has_its_broadcasts_sent(layer: RecordingLayer) -> None:
    def appends_then_fails() -> None:
        _appended(8, 1)
        raise ValueError("refused after its call row was written")

    async def scenario() -> None:
        bind_event_loop(asyncio.get_running_loop())
        try:
            with hops.under_gateway_handler(), pytest.raises(ValueError):
                await hops.run(appends_then_fails)
            await _wait_for(lambda: len(layer.sent) == 1)
        finally:
            bind_event_loop(None)

    asyncio.run(scenario())


def test_a_broadcast_made_after_the_hand_over_goes_the_usual_way(layer: RecordingLayer) -> None:
    """A coroutine cancelled while its hop runs on hands the batch over early; what the thread sends later is
    not lost in a closed batch."""
    batch = BroadcastBatch()

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        bind_event_loop(loop)
        try:
            batch.hand_over()

            def late() -> None:
                with broadcasts_batched(batch):
                    _appended(9, 5)

            await loop.run_in_executor(None, late)
            await _wait_for(lambda: len(layer.sent) == 1)
        finally:
            bind_event_loop(None)

    asyncio.run(scenario())
    assert layer.sent[0][1:] == ("chain-9", 5)


def test_outside_a_batch_a_thread_hands_each_broadcast_to_the_loop(layer: RecordingLayer) -> None:
    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        bind_event_loop(loop)
        try:
            await loop.run_in_executor(None, _appended, 10, 1)
            await _wait_for(lambda: len(layer.sent) == 1)
        finally:
            bind_event_loop(None)

    asyncio.run(scenario())
    assert layer.sent[0][0] == threading.main_thread().name
