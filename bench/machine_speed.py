"""How fast this machine runs plain Python right now: a reference printed beside wall-clock figures.

Throughput on a shared VM follows the host as much as the code: on the 2-core VMs of 2026-12-06 the same code and
command gave 1,222 messages/s on one machine and 441 on the next, and one machine's speed drifted by a third
within the hour. A timed figure is comparable with another only beside the speed of the machine that produced
it, so the load benchmarks print this reference, taken just before they run: the milliseconds a fixed pure-Python
workload (integer arithmetic, string building, dict and list work: what a Django request does between its
queries) takes on one core, the best of REPEATS, with the load average. Lower is faster; a figure taken at a
reference twice as high was taken on a machine about half as fast.

Usage: python bench/machine_speed.py   (prints the reference once)
"""
from __future__ import annotations

import os
import time

__all__ = ["reference_ms", "machine_line"]

REPEATS = 5
ROUNDS = 20_000


def _workload() -> int:
    """Fixed work of the kinds a request's Python does: arithmetic, formatting, dict and list operations."""
    total, seen = 0, {}
    for n in range(ROUNDS):
        key = f"k{n % 512}:{n}"
        seen[key[:6]] = seen.get(key[:6], 0) + n
        total += len(key.split(":")) + (n * 7) % 13
    return total + len(sorted(seen.values()))


def reference_ms() -> float:
    """The best of REPEATS timings of the fixed workload, in milliseconds (one core, this process)."""
    best = float("inf")
    for _ in range(REPEATS):
        began = time.perf_counter()
        _workload()
        best = min(best, time.perf_counter() - began)
    return best * 1000


def machine_line() -> str:
    """One line for a benchmark's output: the reference and the load average it was taken at."""
    return (f"machine: reference Python workload {reference_ms():.1f} ms (bench/machine_speed.py; lower is faster), "
            f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} CPUs")


if __name__ == "__main__":
    print(machine_line())
