"""Server load on 127.0.0.1: append throughput through the HTTP API, and append-to-browser latency.

For each configuration (SQLite or PostgreSQL; embedded in-memory channel layer with the in-process worker, or
Redis with a separate Celery worker) a fresh server is started (bench/server_harness.py) and measured:
  - throughput: N clients, each appending complete agent turns (4 messages, ~1 KB of tool output) to its own
    chain over a keep-alive connection, for at most MAX_REQUESTS_PER_CLIENT requests or MAX_SECONDS; every
    turn also queues a summarization, so the worker competes for the same 2 cores, as in production;
  - latency: VIEWERS logged-in WebSocket viewers on one chain (session cookie, Origin header); an agent
    appends APPENDS turns at a steady pace; latency is from just before the POST until each viewer has the
    `message.appended` frame carrying that turn (p50/p99 over every viewer x turn), frames lost are counted.
Bounded in count and time; nothing listens beyond 127.0.0.1; every database, file and process is removed.

With `db/layer*N` (Redis only) N server processes share the database and Redis, as in the documented scale-out
deployment (docs/operations.md): the throughput clients are spread across them, and the latency agent appends to
another process than the one its viewers are connected to. These rows are in addition to the single-process ones.

Usage: python bench/server_load.py [--configs sqlite/embedded,postgres/embedded,sqlite/redis,postgres/redis,
       sqlite/redis*2,postgres/redis*2] [--viewers 50] [--appends 60] [--seconds 15] [--requests 300]
"""
from __future__ import annotations

import argparse
import asyncio
import hashlib
import http.client
import json
import re
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from machine_speed import machine_line  # noqa: E402
from server_harness import HOST, Server, ServerError, postgres_available, redis_available  # noqa: E402

__all__ = ["agent_turn", "throughput", "latency", "main"]

MAX_REQUESTS_PER_CLIENT = 300
MAX_SECONDS = 15.0
CLIENT_COUNTS = (1, 4)
VIEWERS = 50
APPENDS = 60
APPEND_INTERVAL_SECONDS = 0.1
DELIVERY_TIMEOUT_SECONDS = 15.0
TOOL_OUTPUT_BYTES = 1000
MARK_RE = re.compile(r"\[mark-(\d+)\]")


def agent_turn(n: int, *, first: bool = False) -> list[dict[str, Any]]:
    """One complete turn: ask (carrying a marker), tool call, its output, the answer."""
    cid = "call_" + hashlib.sha256(f"{n}".encode()).hexdigest()[:24]
    host = f"10.1.{n // 250 % 250}.{n % 250 + 1}"
    line = f"{n % 60000}/tcp open ssh OpenSSH 9.{n % 9} on {host}\n"
    batch = [
        {"role": "user", "content": f"[mark-{n}] scan {host}"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": cid, "type": "function", "function": {
            "name": "terminal", "arguments": json.dumps({"input": f"nmap -sV {host}"})}}]},
        {"role": "tool", "tool_call_id": cid,
         "content": (line * (TOOL_OUTPUT_BYTES // len(line) + 1))[:TOOL_OUTPUT_BYTES]},
        {"role": "assistant", "content": f"{host}: ssh open."},
    ]
    return ([{"role": "system", "content": "You are a pentester."}] if first else []) + batch


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else float("nan")


def _client(server: Server, chain_id: int, seed: int, deadline: float, out: list[tuple[int, float]],
            errors: list[str], requests: int) -> None:
    conn = http.client.HTTPConnection(HOST, server.ports[seed % len(server.ports)], timeout=30)  # spread
    try:
        for i in range(requests):
            if time.monotonic() > deadline:
                break
            batch = agent_turn(seed * 100_000 + i, first=i == 0)
            began = time.perf_counter()
            status, body = server.request("POST", f"/api/chains/{chain_id}/messages", {"messages": batch}, conn=conn)
            if status != 201:
                errors.append(f"{status} {body}")
                break
            out.append((len(batch), time.perf_counter() - began))
    finally:
        conn.close()


def throughput(server: Server, clients: int, seconds: float,
               requests: int = MAX_REQUESTS_PER_CLIENT) -> dict[str, Any]:
    chains = [server.new_chain(f"load {i}") for i in range(clients)]
    results: list[tuple[int, float]] = []
    errors: list[str] = []
    deadline = time.monotonic() + seconds
    threads = [threading.Thread(target=_client, args=(server, chain, i, deadline, results, errors, requests))
               for i, chain in enumerate(chains)]
    began = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - began
    stored = sum(server.request("GET", f"/api/chains/{c}")[1]["stats"].get("raw_messages", 0) for c in chains)
    sent = sum(n for n, _ in results)
    times = [t for _, t in results]
    return {"clients": clients, "requests": len(results), "messages": sent, "stored": stored,
            "msgs_per_s": sent / wall, "p50_ms": _percentile(times, 0.5) * 1000,
            "p99_ms": _percentile(times, 0.99) * 1000, "errors": errors[:3]}


async def _viewer(ws: Any, sent: dict[int, float], delays: list[float]) -> None:
    async for frame in ws:
        arrived = time.perf_counter()
        event = json.loads(frame)
        if event.get("type") not in ("message.appended", "message.appended_up_to"):  # bursts come coalesced
            continue
        for msg in event.get("messages", []):
            mark = MARK_RE.search(str(msg.get("content") or "")) if msg.get("role") == "user" else None
            if mark and int(mark.group(1)) in sent:
                delays.append(arrived - sent[int(mark.group(1))])


async def latency(server: Server, viewers: int, appends: int) -> dict[str, Any]:
    import websockets

    chain = server.new_chain("latency")
    cookie = server.session_cookie()
    url = f"ws://{HOST}:{server.port}/ws/chains/{chain}/"
    sockets = [await websockets.connect(url, origin=server.url, additional_headers={"Cookie": cookie},
                                        max_size=None, open_timeout=30) for _ in range(viewers)]
    hellos = [json.loads(await ws.recv()) for ws in sockets]
    assert all(h.get("type") == "hello" for h in hellos), hellos[:1]
    sent: dict[int, float] = {}
    delays: list[float] = []
    readers = [asyncio.create_task(_viewer(ws, sent, delays)) for ws in sockets]
    loop = asyncio.get_running_loop()
    path = f"/api/chains/{chain}/messages"
    agent_port = server.ports[-1]  # with several server processes the agent appends to another than the viewers'
    for n in range(appends):
        sent[n] = time.perf_counter()
        status, body = await loop.run_in_executor(None, lambda n=n: server.request(
            "POST", path, {"messages": agent_turn(n, first=n == 0)}, port=agent_port))
        if status != 201:
            raise ServerError(f"append failed: {status} {body}")
        await asyncio.sleep(APPEND_INTERVAL_SECONDS)
    deadline = time.monotonic() + DELIVERY_TIMEOUT_SECONDS
    while len(delays) < viewers * appends and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    for task in readers:
        task.cancel()
    await asyncio.gather(*readers, return_exceptions=True)
    await asyncio.gather(*(ws.close() for ws in sockets), return_exceptions=True)
    return {"viewers": viewers, "appends": appends, "delivered": len(delays), "expected": viewers * appends,
            "p50_ms": _percentile(delays, 0.5) * 1000, "p99_ms": _percentile(delays, 0.99) * 1000,
            "max_ms": max(delays, default=float("nan")) * 1000, "mean_ms": statistics.fmean(delays) * 1000
            if delays else float("nan")}


def parse_config(config: str) -> tuple[str, str, int]:
    """"postgres/redis" -> ("postgres", "redis", 1); "postgres/redis*2": two server processes on one database,
    the clients spread across them (the scale-out deployment; Redis only)."""
    name, _, processes = config.partition("*")
    db, layer = name.split("/")
    return db, layer, int(processes or 1)


def _skip_reason(db: str, layer: str) -> str:
    if db == "postgres" and not postgres_available():
        return "PostgreSQL is not answering on 127.0.0.1:5432"
    if layer == "redis" and not redis_available():
        return "no redis-server binary and nothing on 127.0.0.1:6379"
    return ""


def run_config(db: str, layer: str, processes: int, args: argparse.Namespace) -> tuple[list[dict], dict | str]:
    reason = _skip_reason(db, layer)
    if reason:
        return [], f"skipped: {reason}"
    try:
        with Server(db=db, layer=layer, processes=processes) as server:
            loads = [throughput(server, clients, args.seconds, args.requests) for clients in CLIENT_COUNTS]
            return loads, asyncio.run(latency(server, args.viewers, args.appends))
    except (ServerError, OSError) as exc:
        return [], f"failed: {exc}"


def _label(config: str) -> str:
    db, layer, processes = parse_config(config)
    return f"{db}/{layer}" + (f", {processes} server processes (scale-out)" if processes > 1 else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", default="sqlite/embedded,postgres/embedded,sqlite/redis,postgres/redis,"
                        "sqlite/redis*2,postgres/redis*2")
    parser.add_argument("--viewers", type=int, default=VIEWERS)
    parser.add_argument("--appends", type=int, default=APPENDS)
    parser.add_argument("--seconds", type=float, default=MAX_SECONDS)
    # a longer run than the default's few seconds includes the worker's summarizations in steady state
    parser.add_argument("--requests", type=int, default=MAX_REQUESTS_PER_CLIENT, help="at most this many per client")
    args = parser.parse_args(argv)
    configs = [c for c in args.configs.split(",") if c]
    machine_before = machine_line()  # figures compare across machines only beside their speed
    results = {_label(c): run_config(*parse_config(c), args) for c in configs}
    print(f"## Server load (127.0.0.1; appends of 4-message turns; at most {args.requests} requests or "
          f"{args.seconds:.0f} s per client)\n")
    print(f"Before: {machine_before}  \nAfter: {machine_line()}\n")
    print("| database / channel layer | clients | requests | messages/s | stored = sent | request p50 ms "
          "| request p99 ms |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, (loads, lat) in results.items():
        if not loads:
            print(f"| {name} | {lat} ||||||")
        for r in loads:
            ok = "yes" if r["stored"] == r["messages"] and not r["errors"] else f"no ({r['stored']}; {r['errors']})"
            print(f"| {name} | {r['clients']} | {r['requests']} | {r['msgs_per_s']:,.0f} | {ok} "
                  f"| {r['p50_ms']:.1f} | {r['p99_ms']:.1f} |")
    print(f"\n### Append-to-browser latency ({args.viewers} WebSocket viewers on one chain, {args.appends} appends "
          f"every {APPEND_INTERVAL_SECONDS * 1000:.0f} ms)\n")
    print("| database / channel layer | frames delivered | p50 ms | p99 ms | max ms |")
    print("|---|---:|---:|---:|---:|")
    for name, (_loads, lat) in results.items():
        if isinstance(lat, str):
            print(f"| {name} | {lat} ||||")
            continue
        print(f"| {name} | {lat['delivered']}/{lat['expected']} | {lat['p50_ms']:.1f} | {lat['p99_ms']:.1f} "
              f"| {lat['max_ms']:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
