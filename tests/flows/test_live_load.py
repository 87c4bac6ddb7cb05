"""Every viewer gets every message: 50 real WebSocket viewers while an agent appends 20 turns a second.

A real server (`manage.py run`: Daphne, embedded worker, in-memory channel layer, SQLite) in a subprocess, started
by bench/server_harness.py. Each viewer does what static/js/live.js does: it keeps the highest gap-free seq it
holds, adds the messages that frames carry, and fetches `GET /api/chains/{id}/messages?after_seq=N` when a frame
(an append, a coalesced burst or the heartbeat) says the chain is further along. No viewer polls.
"""
from __future__ import annotations

import asyncio
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from server_harness import HOST, Server  # noqa: E402
from server_load import agent_turn  # noqa: E402

VIEWERS = 50
APPENDS_PER_SECOND = 20
SECONDS = 4
SETTLE_SECONDS = 20.0  # after the last append: a heartbeat period (5 s) and the catch-up fetches


@dataclass
class Viewer:
    have: int = 0
    seqs: list[int] = field(default_factory=list)
    frames: int = 0
    fetches: int = 0
    catching_up: bool = False

    def add(self, messages: list[dict[str, Any]]) -> None:
        for m in sorted(messages, key=lambda m: m["seq"]):
            if m["seq"] == self.have + 1:
                self.have = m["seq"]
                self.seqs.append(m["seq"])


async def _catch_up(server: Server, chain: int, viewer: Viewer) -> None:
    if viewer.catching_up:
        return
    viewer.catching_up = True
    loop = asyncio.get_running_loop()
    try:
        while True:
            viewer.fetches += 1
            status, body = await loop.run_in_executor(None, lambda: server.request(
                "GET", f"/api/chains/{chain}/messages?after_seq={viewer.have}"))
            assert status == 200, body
            viewer.add(body["messages"])
            if not body["has_more"]:
                return
    finally:
        viewer.catching_up = False


async def _watch(ws: Any, server: Server, chain: int, viewer: Viewer) -> None:
    async for raw in ws:
        frame = json.loads(raw)
        viewer.frames += 1
        viewer.add(frame.get("messages") or [] if frame["type"].startswith("message.appended") else [])
        if frame.get("last_seq", 0) > viewer.have:
            asyncio.get_running_loop().create_task(_catch_up(server, chain, viewer))


async def _run(server: Server) -> tuple[list[Viewer], int, float]:
    """Append at up to APPENDS_PER_SECOND (a loaded machine may manage less: the figure is printed, not timed)."""
    import websockets

    chain = server.new_chain("live load")
    cookie = server.session_cookie()
    url = f"ws://{HOST}:{server.port}/ws/chains/{chain}/"
    sockets = [await websockets.connect(url, origin=server.url, additional_headers={"Cookie": cookie},
                                        max_size=None, open_timeout=30) for _ in range(VIEWERS)]
    for ws in sockets:
        assert json.loads(await ws.recv())["type"] == "hello"
    viewers = [Viewer() for _ in sockets]
    tasks = [asyncio.create_task(_watch(ws, server, chain, v)) for ws, v in zip(sockets, viewers, strict=True)]
    loop = asyncio.get_running_loop()
    began = time.monotonic()
    last_seq = 0
    for n in range(APPENDS_PER_SECOND * SECONDS):
        status, body = await loop.run_in_executor(None, lambda n=n: server.request(
            "POST", f"/api/chains/{chain}/messages", {"messages": agent_turn(n, first=n == 0)}))
        assert status == 201, body
        last_seq = body["last_seq"]
        await asyncio.sleep(max(0.0, began + (n + 1) / APPENDS_PER_SECOND - time.monotonic()))
    rate = APPENDS_PER_SECOND * SECONDS / (time.monotonic() - began)
    deadline = time.monotonic() + SETTLE_SECONDS
    while any(v.have < last_seq for v in viewers) and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await asyncio.gather(*(ws.close() for ws in sockets), return_exceptions=True)
    return viewers, last_seq, rate


@pytest.mark.parametrize("capacity", ["", "3"], ids=["default-capacity", "capacity-3-drops-frames"])
def test_fifty_viewers_at_twenty_appends_a_second_each_get_every_message(capacity: str, monkeypatch) -> None:
    """With a capacity of 3 the channel layer drops most frames: the heartbeat and catch-up still deliver all."""
    pytest.importorskip("websockets")
    if capacity:
        monkeypatch.setenv("CHANNEL_CAPACITY", capacity)
    with Server(db="sqlite", layer="embedded") as server:
        viewers, last_seq, rate = asyncio.run(_run(server))
    fetches = sum(v.fetches for v in viewers)
    frames = sum(v.frames for v in viewers)
    print(f"\n{VIEWERS} viewers, {rate:.1f} appends/s: {frames} frames, {fetches} catch-up fetches")
    assert last_seq == 4 * APPENDS_PER_SECOND * SECONDS + 1
    behind = [v.have for v in viewers if v.seqs != list(range(1, last_seq + 1))]
    assert not behind, f"{len(behind)} viewers stopped short of seq {last_seq}: {behind[:5]}"
