"""Work per turn, counted: the p95 time per turn's deterministic stand-in, comparable on a busy machine.

Every probe file's transcript (bench/probes/, the same files as summary_probes.py) is replayed turn by turn at
an 8k window through each manager (bench/context_managers.py, the same stub model for all). Per turn it counts
the Python function calls the manager makes (cProfile's total, the stub summarizer's included), so a manager
that does less work per turn shows it whatever the load; time per turn on an idle machine is
summary_probes.py's "p95 ms per turn" column. Prints per manager: turns, summarize calls, input KiB, function
calls per turn (median, p95, max) and in all.

Usage: python bench/turn_work.py [--window 8192] [--files ...] [--managers ours-agent-window-bounded,langmem]
"""
from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from context_managers import split_turns  # noqa: E402
from nothing_measured import nothing_measured  # noqa: E402
from summary_probes import CORPUS_DIR, MANAGERS, PROBES_DIR, _probes  # noqa: E402

__all__ = ["turn_calls", "main"]


def turn_calls(path: Path, key: str, window: int) -> tuple[list[int], int, int]:
    """(function calls per turn, summarize calls, summarizer input bytes) of one replay."""
    raw = json.loads(path.read_text(encoding="utf-8"))["messages"]
    manager = MANAGERS[key](window)
    per_turn = []
    for turn in split_turns(raw):
        profile = cProfile.Profile()
        profile.enable()
        try:
            manager.turn(turn)
            manager.view()
        except Exception:  # noqa: BLE001 - a manager failing mid-file (LangMem's re-summarized ids) stops its replay
            profile.disable()
            break
        profile.disable()
        per_turn.append(pstats.Stats(profile).total_calls)  # type: ignore[attr-defined]
    return per_turn, manager.model.calls, manager.model.input_bytes


def _p95(values: list[int]) -> float:
    return statistics.quantiles(values, n=20, method="inclusive")[18] if len(values) > 1 else float(sum(values))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--window", type=int, default=8192)
    parser.add_argument("--files", default="")
    parser.add_argument("--managers", default="ours-agent-window-bounded,langmem")
    args = parser.parse_args(argv)
    wanted = set(filter(None, args.files.split(",")))
    files = [CORPUS_DIR / name for name, _, _ in _probes(PROBES_DIR, wanted) if (CORPUS_DIR / name).is_file()]
    if not files:
        return nothing_measured(f"no corpus file with a fact list in {CORPUS_DIR}", "see bench/README.md")
    print(f"## Function calls per turn (window {args.window:,}; {len(files)} files; cProfile totals)\n")
    print("| manager | turns | summarize calls | input KiB | calls per turn: median | p95 | max | in all |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for key in filter(None, args.managers.split(",")):
        turns: list[int] = []
        calls = input_bytes = 0
        try:
            for path in files:
                per_turn, n, b = turn_calls(path, key, args.window)
                turns, calls, input_bytes = turns + per_turn, calls + n, input_bytes + b
        except ImportError as exc:
            print(f"| {key} | not installed here: {exc} |||||||")
            continue
        print(f"| {key} | {len(turns)} | {calls} | {input_bytes / 1024:,.0f} | {statistics.median(turns):,.0f} "
              f"| {_p95(turns):,.0f} | {max(turns):,} | {sum(turns):,} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
