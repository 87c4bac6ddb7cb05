"""The load benchmarks print the machine's speed beside their figures (bench/machine_speed.py)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import machine_speed  # noqa: E402


def test_the_reference_is_the_best_of_its_timings(monkeypatch):
    ticks = iter([0.0, 0.030, 1.0, 1.012, 2.0, 2.020, 3.0, 3.015, 4.0, 4.050])
    monkeypatch.setattr(machine_speed.time, "perf_counter", lambda: next(ticks))
    monkeypatch.setattr(machine_speed, "_workload", lambda: 0)
    assert round(machine_speed.reference_ms(), 6) == 12.0


def test_the_workload_stays_the_work_earlier_references_timed():
    # references from different sessions compare only while the workload is the same: a change fails here
    assert (machine_speed.ROUNDS, machine_speed.REPEATS, machine_speed._workload()) == (20_000, 5, 166_572)


def test_the_line_names_the_reference_the_load_and_the_cpus():
    done = subprocess.run([sys.executable, str(BENCH / "machine_speed.py")], capture_output=True, text=True,
                          timeout=60, check=True)
    assert re.fullmatch(r"machine: reference Python workload \d+\.\d ms \(bench/machine_speed\.py; lower is "
                        r"faster\), load average \d+\.\d\d, \d+ CPUs\n", done.stdout), done.stdout
