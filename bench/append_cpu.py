"""CPU seconds per appended message, by process: what API appends cost a real server, comparable on a busy machine.

Messages per second on a shared 2-core machine say as much about the other users as about the server; the CPU
time the server's processes spend per appended message does not (much). For each configuration a fresh server is
started as `bench/server_load.py` starts it (`server_harness.py`), N clients append 4-message agent turns to
their own chains over keep-alive connections (`server_load.throughput`), and the CPU time (user + system, from
/proc/PID/stat) of each process is read before the first append, when the last one is answered, and once the
summarizations the turns queued have run (the processes went quiet):
  - server: the Daphne process(es) (with the embedded worker's threads when there is no Redis),
  - worker: the separate Celery worker (Redis configurations),
  - postgres: the backends connected to the throwaway database (a backend that exits during the run is missed;
    the server's and worker's connections are kept, so none does),
  - redis: the private redis-server,
  - clients: this process (the client threads' requests and JSON), while appending only.
Each cell is milliseconds of CPU per appended message, "while appending + afterwards"; "server side" adds up all
but the clients. The summarization events the turns led to are counted by outcome (how often the worker ran).
The wall-clock rate is printed for reference only.

Usage: python bench/append_cpu.py [--configs postgres/redis,sqlite/redis,postgres/redis*2,...] [--clients 4]
       [--seconds 15] [--requests 300]   (`*N`: N server processes, as bench/server_load.py)
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from machine_speed import machine_line  # noqa: E402
from server_harness import PG_ADMIN_URL, Server, ServerError  # noqa: E402
from server_load import MAX_REQUESTS_PER_CLIENT, parse_config, throughput  # noqa: E402

__all__ = ["cpu_seconds", "database_backends", "main"]

TICKS = os.sysconf("SC_CLK_TCK")
QUIET_SECONDS = 1.0        # the processes are done when they used less than QUIET_CPU in this long
QUIET_CPU = 0.02
DRAIN_TIMEOUT_SECONDS = 120.0


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process (all its threads) so far; 0 when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime (fields 14 and 15 of the line)


def database_backends(db_name: str) -> list[int]:
    if not db_name:
        return []
    import psycopg

    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        rows = conn.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s", (db_name,)).fetchall()
    return [int(pid) for (pid,) in rows]


def _snapshot(server: Server) -> dict[str, float]:
    out = {f"{role}:{pid}": cpu_seconds(pid) for role, pid in server.pids()}
    backends = database_backends(server.pg_name)
    out.update({f"pg:{pid}": cpu_seconds(pid) for pid in backends})
    return out


def _by_role(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    spent: dict[str, float] = {}
    for key, value in after.items():
        role = "postgres" if key.startswith("pg:") else key.split(":")[0]
        spent[role] = spent.get(role, 0.0) + value - before.get(key, 0.0)
    return spent


def _drain(server: Server) -> dict[str, float]:
    """Wait until the processes went quiet (the queued summarizations ran); their CPU seconds then."""
    deadline = time.monotonic() + DRAIN_TIMEOUT_SECONDS
    last = _snapshot(server)
    while time.monotonic() < deadline:
        time.sleep(QUIET_SECONDS)
        now = _snapshot(server)
        if sum(now.values()) - sum(last.get(k, 0.0) for k in now) < QUIET_CPU:
            return now
        last = now
    return last


def _client_cpu() -> float:
    """CPU seconds of this process: while `throughput` runs, its client threads' work (requests, JSON)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


RUNS_SQL = ("import json; from flows.models import SummaryEvent as E; "
            "print(json.dumps(dict(E.objects.values_list('outcome').annotate(n=__import__('django').db.models"
            ".Count('id')).order_by())))")


def measure(db: str, layer: str, processes: int, clients: int, seconds: float,
            requests: int = MAX_REQUESTS_PER_CLIENT) -> dict[str, Any]:
    with Server(db=db, layer=layer, processes=processes) as server:
        server.new_chain("warm-up")  # the first requests load code and caches: not counted
        before, client_before = _snapshot(server), _client_cpu()
        load = throughput(server, clients, seconds, requests)
        answered, client_spent = _snapshot(server), _client_cpu() - client_before
        drained = _drain(server)
        runs = json.loads(server.manage("shell", "-c", RUNS_SQL).strip().splitlines()[-1])
    if load["errors"] or load["stored"] != load["messages"]:
        raise ServerError(f"{db}/{layer}: stored {load['stored']} of {load['messages']}: {load['errors']}")
    during = {**_by_role(before, answered), "client": client_spent}
    return {"load": load, "during": during, "after": _by_role(answered, drained), "runs": runs}


def _row(name: str, clients: int, result: dict[str, Any]) -> str:
    msgs = result["load"]["messages"]
    during, after = result["during"], result["after"]
    roles = ("server", "worker", "postgres", "redis", "client")

    def ms(spent: dict[str, float], role: str) -> str:
        return f"{spent.get(role, 0.0) * 1000 / msgs:.2f}" if role in spent else "-"

    server_side = sum(v for k, v in during.items() if k != "client") + sum(after.values())
    cells = " | ".join(f"{ms(during, r)} + {ms(after, r)}" for r in roles[:-1])
    runs = ", ".join(f"{n} {outcome}" for outcome, n in sorted(result["runs"].items())) or "none"
    return (f"| {name} | {clients} | {msgs} | {cells} | {ms(during, 'client')} | {server_side * 1000 / msgs:.2f} "
            f"| {runs} | {result['load']['msgs_per_s']:,.0f} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", default="postgres/redis,sqlite/redis,postgres/embedded,sqlite/embedded")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--requests", type=int, default=MAX_REQUESTS_PER_CLIENT,
                        help=f"at most this many appends per client (default {MAX_REQUESTS_PER_CLIENT}; more: longer, "
                             "steadier runs)")
    args = parser.parse_args(argv)
    print("CPU ms per appended message, while appending + afterwards (the queued summarizations); "
          f"at the start {machine_line()}\n")
    print("| database / channel layer | clients | messages | server | worker | postgres backends | redis "
          "| clients (this process) | server side ms/msg | summarization events | messages/s (wall, for reference) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|")
    for config in (c for c in args.configs.split(",") if c):
        result = measure(*parse_config(config), args.clients, args.seconds, args.requests)
        print(_row(config, args.clients, result), flush=True)
    print(f"\nload average at the end {os.getloadavg()[0]:.1f}; {machine_line()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
