"""The Redis layer's group send (`flows.core.redis_layer.RedisLayer`) delivers what channels_redis's delivers, in
fewer round trips: one when the group has no members, two when it has.

Against the local Redis (skipped without it), each test with a key prefix of its own.
"""
from __future__ import annotations

import asyncio
import secrets
import time
from collections import Counter
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import pytest
import pytest_asyncio
import redis.asyncio
from channels_redis.core import RedisChannelLayer

from flows.core import redis_layer
from flows.core.redis_layer import RedisLayer
from tests.flows.pipeline_live import REDIS_URL, redis_up

pytestmark = [pytest.mark.skipif(not redis_up(), reason="needs Redis on 127.0.0.1:6379"), pytest.mark.asyncio]

RECEIVE_TIMEOUT_SECONDS = 5.0
NOTHING_MORE_SECONDS = 0.3  # a receive that gets nothing within this is taken as "nothing queued"


def _layer(kind: type[RedisChannelLayer], prefix: str, **config: Any) -> RedisChannelLayer:
    return kind(hosts=[REDIS_URL + "/15"], prefix=prefix, **config)


@pytest_asyncio.fixture
async def prefix() -> AsyncIterator[str]:
    name = f"test-layer-{secrets.token_hex(4)}"
    yield name
    client = redis.asyncio.Redis.from_url(REDIS_URL + "/15")
    keys = [key async for key in client.scan_iter(match=f"{name}*")]
    if keys:
        await client.delete(*keys)
    await client.aclose()


@pytest.fixture
def round_trips(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Round trips to Redis: commands by name, a pipeline (its commands in one trip) as PIPELINE."""
    sent: Counter[str] = Counter()
    execute, pipeline = redis.asyncio.Redis.execute_command, redis.asyncio.client.Pipeline.execute

    async def counted(self: Any, *args: Any, **options: Any) -> Any:
        sent[str(args[0]).upper()] += 1
        return await execute(self, *args, **options)

    async def counted_pipeline(self: Any, *args: Any, **options: Any) -> Any:
        sent["PIPELINE"] += 1
        return await pipeline(self, *args, **options)

    monkeypatch.setattr(redis.asyncio.Redis, "execute_command", counted)
    monkeypatch.setattr(redis.asyncio.client.Pipeline, "execute", counted_pipeline)
    return sent


def _two_minutes_later() -> SimpleNamespace:
    """The layer's clock, two minutes on (the layer reads `time.time` only)."""
    return SimpleNamespace(time=lambda: time.time() + 120)


async def _nothing_more(layer: RedisChannelLayer, channel: str) -> bool:
    try:
        await asyncio.wait_for(layer.receive(channel), NOTHING_MORE_SECONDS)
    except TimeoutError:
        return True
    return False


async def _received(layer: RedisChannelLayer, channels: list[str]) -> dict[str, dict[str, Any]]:
    return {channel: await asyncio.wait_for(layer.receive(channel), RECEIVE_TIMEOUT_SECONDS) for channel in channels}


async def test_a_group_without_members_costs_one_round_trip(prefix, round_trips):
    layer = _layer(RedisLayer, prefix)
    await layer.group_send("chain-1", {"type": "chain.event", "text": "{}"})
    assert sum(round_trips.values()) == 1
    await layer.close_pools()


@pytest.mark.parametrize("kind", [RedisLayer, RedisChannelLayer])
async def test_every_member_receives_the_message_and_ours_in_two_round_trips(prefix, round_trips, kind):
    layer = _layer(kind, prefix)
    local = [await layer.new_channel() for _ in range(3)]  # one process's sockets share one Redis key
    named = ["worker-a", "worker-b"]
    for channel in [*local, *named]:
        await layer.group_add("chain-7", channel)
    round_trips.clear()
    message = {"type": "chain.event", "kind": "message.appended", "text": "<script>alert(1)</script>"}
    await layer.group_send("chain-7", message)
    sent = sum(round_trips.values())
    got = await _received(layer, [*local, *named])
    assert all(m == message for m in got.values()), got
    assert all([await _nothing_more(layer, channel) for channel in [*local, *named]])
    assert sent == (2 if kind is RedisLayer else 4)  # the stock layer's four, for the record
    await layer.close_pools()


async def test_a_member_past_the_group_expiry_is_dropped_and_gets_nothing(prefix, monkeypatch):
    layer = _layer(RedisLayer, prefix, group_expiry=60)
    await layer.group_add("chain-2", "old-socket")
    monkeypatch.setattr(redis_layer, "time", _two_minutes_later())
    await layer.group_send("chain-2", {"type": "chain.event", "text": "late"})
    monkeypatch.undo()
    assert await _nothing_more(layer, "old-socket")
    await layer.group_add("chain-2", "new-socket")
    await layer.group_send("chain-2", {"type": "chain.event", "text": "now"})
    assert (await _received(layer, ["new-socket"]))["new-socket"]["text"] == "now"
    assert await _nothing_more(layer, "old-socket")
    await layer.close_pools()


async def test_a_full_channel_is_skipped_and_the_others_still_receive(prefix, caplog):
    layer = _layer(RedisLayer, prefix, capacity=1)
    for channel in ("slow", "fast"):
        await layer.group_add("chain-3", channel)
    await layer.group_send("chain-3", {"type": "chain.event", "text": "first"})
    assert (await _received(layer, ["fast"]))["fast"]["text"] == "first"
    with caplog.at_level("INFO", logger="flows.core.redis_layer"):
        await layer.group_send("chain-3", {"type": "chain.event", "text": "second"})
    assert "1 of 2 channels over capacity in group chain-3" in caplog.text
    assert (await _received(layer, ["slow", "fast"])) == {
        "slow": {"type": "chain.event", "text": "first"}, "fast": {"type": "chain.event", "text": "second"}}
    await layer.close_pools()


async def test_a_queued_message_past_its_expiry_frees_its_place(prefix, monkeypatch):
    layer = _layer(RedisLayer, prefix, capacity=1, expiry=60)
    await layer.group_add("chain-4", "reader")
    await layer.group_send("chain-4", {"type": "chain.event", "text": "stale"})
    monkeypatch.setattr(redis_layer, "time", _two_minutes_later())
    await layer.group_send("chain-4", {"type": "chain.event", "text": "fresh"})  # room again: "stale" expired
    monkeypatch.undo()
    assert (await _received(layer, ["reader"]))["reader"]["text"] == "fresh"
    await layer.close_pools()


async def test_a_group_name_the_layer_refuses_is_refused_as_before(prefix):
    layer = _layer(RedisLayer, prefix)
    with pytest.raises(TypeError):
        await layer.group_send("no spaces allowed", {"type": "chain.event"})
    await layer.close_pools()
