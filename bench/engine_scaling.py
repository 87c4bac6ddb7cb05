"""Per-turn engine time and peak memory as a chain grows from 100 to 10,000 messages.

The chain is replayed turn by turn the way the pipeline runs it (flows.pipeline.summarization): after each turn the
engine gets the current *view* plus the turn's new raw messages (lineage in raw indices), summarizes it with
the agent profile and the offline extractive summarizer, then fits it to a 128k window (token count of the
view). The raw chain is never handed to the engine again, so the per-turn cost should follow the size of
the view and of the new messages, not the length of the chain. Two chains: a synthetic pentest-like one
(4 messages per turn, tool output of 200-4,000 bytes) and the shared corpus files concatenated and looped
(tool-call ids made unique per loop).

For contrast, the columns "count raw, cold" and "count raw, warm" time a token count of the *whole* raw chain
with an empty cache and with the cache warm: what a design that re-reads the whole chain every turn would
pay, and what the per-message token cache saves.

Profiles: "agent" is PentAGI's agent defaults. With them (SUMM_HUMAN_IN_QA off) the question-answer pass keeps
the user messages of collapsed sections verbatim in the first section's header (pentagi-summarizer.md §QA,
step 5: "this grows with every collapse"), so that one message grows with every user message of the chain.
"agent+human_in_qa" turns SUMMARIZER_SUM_MSG_HUMAN_IN_QA on, which summarizes them instead.

Usage: .venv/bin/python bench/engine_scaling.py [--max-messages 10000]
       [--runs synthetic:agent,synthetic:agent+human_in_qa,corpus:agent]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from context_managers import split_turns  # noqa: E402  (bench/ is on sys.path when run as a script)
from nothing_measured import nothing_measured  # noqa: E402

from summarizer import (  # noqa: E402
    SummarizerConfig,
    fit_to_window,
    make_extractive,
    summarize_chain,
)
from summarizer.tokens.count import TokenCache, count_tokens  # noqa: E402

__all__ = ["synthetic_turns", "corpus_turns", "replay", "main"]

Message = dict[str, Any]
CHECKPOINTS = (100, 250, 500, 1000, 2500, 5000, 10000)
WINDOW_TOKENS = 128_000          # a gpt-4o-sized window: fitting is a token count of the view unless it overflows
TIMED_TURNS_PER_CHECKPOINT = 10  # per-turn figures are the median of the last turns before each checkpoint
CORPUS_DIR = ROOT.parent / "shared" / "corpus"
DEFAULT_RUNS = "synthetic:agent,synthetic:agent+human_in_qa,corpus:agent"
DEFAULT_MEMORY_RUNS = "corpus:agent"
PROFILES: dict[str, Callable[[], SummarizerConfig]] = {
    "agent": SummarizerConfig.agent,
    "agent+human_in_qa": lambda: SummarizerConfig.agent().replace(summ_human_in_qa=True),
}


def _call_id(n: int) -> str:
    return "call_" + hashlib.sha256(str(n).encode()).hexdigest()[:24]


def synthetic_turns() -> Iterator[list[Message]]:
    """An endless deterministic pentest-like chain: ask, tool call, tool output, answer."""
    yield [{"role": "system", "content": "You are a careful penetration tester."}]
    n = 0
    while True:
        host = f"10.{n // 65536 % 256}.{n // 256 % 256}.{n % 256}"
        digest = hashlib.md5(str(n).encode()).hexdigest()
        line = f"{1000 + n % 60000}/tcp open http nginx 1.{n % 30} {host} {digest}\n"
        size = 200 + (n * 7919) % 3800
        cid = _call_id(n)
        yield [
            {"role": "user", "content": f"Task {n}: enumerate {host} and report what is exposed."},
            {"role": "assistant", "content": None, "tool_calls": [{"id": cid, "type": "function", "function": {
                "name": "terminal", "arguments": json.dumps({"input": f"nmap -sV -p- {host}"})}}]},
            {"role": "tool", "tool_call_id": cid, "content": (line * (size // len(line) + 1))[:size]},
            {"role": "assistant", "content": f"{host} exposes nginx (hash {digest[:12]}); moving on."},
        ]
        n += 1


def _renamed(msg: Message, loop: int) -> Message:
    """A copy whose tool-call ids are unique to this loop over the corpus (ids must not repeat in a chain)."""
    out = dict(msg)
    if out.get("tool_calls"):
        out["tool_calls"] = [{**c, "id": f"{c['id']}_{loop}"} for c in out["tool_calls"]]
    if out.get("tool_call_id"):
        out["tool_call_id"] = f"{out['tool_call_id']}_{loop}"
    return out


def corpus_turns(corpus_dir: Path = CORPUS_DIR) -> Iterator[list[Message]]:
    """The corpus files one after another, looped; only the very first system prompt is kept."""
    files = sorted(corpus_dir.glob("*.json"))
    if not files:
        raise SystemExit(f"no corpus files in {corpus_dir}")
    loop, first = 0, True
    while True:
        for path in files:
            messages = json.loads(path.read_text(encoding="utf-8"))["messages"]
            if not first:
                messages = [m for m in messages if m["role"] != "system"]
            for turn in split_turns([_renamed(m, loop) for m in messages]):
                if first:
                    first = False
                yield turn
        loop += 1


class _Replay:
    """The pipeline's per-turn loop on plain lists: view + new raw -> summarize -> fit."""

    def __init__(self, config: SummarizerConfig, summarize: Callable[[str], str]) -> None:
        self.config, self.summarize = config, summarize
        self.raw: list[Message] = []
        self.view: list[Message] = []
        self.lineage: list[list[int]] = []
        self.calls = 0

    def turn(self, new: list[Message]) -> float:
        start = len(self.raw)
        self.raw.extend(new)
        messages = self.view + new
        lineage = self.lineage + [[start + i] for i in range(len(new))]
        began = time.perf_counter()
        result = summarize_chain(messages, self.config, self.summarize, lineage_in=lineage)
        if result.error:
            raise RuntimeError(f"engine failed at raw message {start}: {result.error}")
        fit = fit_to_window(result.messages, window_tokens=WINDOW_TOKENS, summarize=self.summarize)
        elapsed = time.perf_counter() - began
        self.view = fit.messages
        self.lineage = result.lineage if not fit.compacted else [
            sorted({i for j in lin for i in result.lineage[j]}) for lin in fit.lineage]
        self.calls += result.calls + fit.calls
        return elapsed


def _bytes(messages: list[Message]) -> int:
    return sum(len(json.dumps(m, ensure_ascii=False).encode()) for m in messages)


def _timed(fn: Callable[[], Any]) -> float:
    began = time.perf_counter()
    fn()
    return time.perf_counter() - began


def replay(turns: Iterator[list[Message]], max_messages: int, *, config: SummarizerConfig | None = None,
           memory: bool = False) -> list[dict[str, Any]]:
    """Rows at each checkpoint: per-turn engine time (median of the last turns), sizes, whole-chain counts."""
    run = _Replay(config or SummarizerConfig.agent(), make_extractive())
    rows, recent, checkpoints = [], [], [c for c in CHECKPOINTS if c <= max_messages]
    if memory:
        tracemalloc.start()
    for new in turns:
        recent = (recent + [(run.turn(new), len(new))])[-TIMED_TURNS_PER_CHECKPOINT:]
        if not checkpoints or len(run.raw) < checkpoints[0]:
            continue
        checkpoints.pop(0)
        times = [t for t, _ in recent]
        row = {"raw_messages": len(run.raw), "raw_kib": _bytes(run.raw) / 1024,
               "new_per_turn": statistics.mean(n for _, n in recent),
               "turn_ms": statistics.median(times) * 1000, "turn_ms_max": max(times) * 1000,
               "view_messages": len(run.view), "view_kib": _bytes(run.view) / 1024, "calls": run.calls}
        if memory:
            row["traced_mib"], row["peak_mib"] = (v / 2**20 for v in tracemalloc.get_traced_memory())
        else:
            cold = TokenCache()
            row["count_cold_ms"] = _timed(lambda cache=cold: count_tokens(run.raw, cache=cache)) * 1000
            row["count_warm_ms"] = _timed(lambda cache=cold: count_tokens(run.raw, cache=cache)) * 1000
        rows.append(row)
        if not checkpoints:
            break
    if memory:
        tracemalloc.stop()
    return rows


def _print_table(title: str, rows: list[dict[str, Any]], memory: bool) -> None:
    print(f"\n### {title}\n")
    if memory:
        print("| raw messages | raw KiB | view messages | view KiB | traced now MiB | peak MiB |")
        print("|---:|---:|---:|---:|---:|---:|")
        for r in rows:
            print(f"| {r['raw_messages']:,} | {r['raw_kib']:,.0f} | {r['view_messages']} | {r['view_kib']:,.0f} "
                  f"| {r['traced_mib']:.1f} | {r['peak_mib']:.1f} |")
        return
    print("| raw messages | raw KiB | new msgs/turn | engine ms/turn (median) | max ms | view messages | view KiB "
          "| summarize calls so far | count raw, cold ms | count raw, warm ms |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['raw_messages']:,} | {r['raw_kib']:,.0f} | {r['new_per_turn']:.1f} | {r['turn_ms']:.1f} "
              f"| {r['turn_ms_max']:.1f} | {r['view_messages']} | {r['view_kib']:,.0f} | {r['calls']} "
              f"| {r['count_cold_ms']:.1f} | {r['count_warm_ms']:.1f} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-messages", type=int, default=CHECKPOINTS[-1])
    parser.add_argument("--runs", default=DEFAULT_RUNS, help="comma list of chain:profile, chain in "
                        "synthetic|corpus, profile in " + "|".join(PROFILES))
    parser.add_argument("--corpus-dir", type=Path, default=CORPUS_DIR)
    parser.add_argument("--memory-runs", default=DEFAULT_MEMORY_RUNS,
                        help="runs repeated under tracemalloc (about twice as slow); empty for none")
    args = parser.parse_args(argv)
    sources = {"synthetic": synthetic_turns, "corpus": lambda: corpus_turns(args.corpus_dir)}
    print(f"## Engine scaling (extractive summarizer, window {WINDOW_TOKENS:,} tokens)")
    skipped = []
    for spec in [r.strip() for r in args.runs.split(",") if r.strip()]:
        name, _, profile = spec.partition(":")
        if name not in sources or profile not in PROFILES:
            parser.error(f"unknown run {spec!r}")
        if name == "corpus" and not any(args.corpus_dir.glob("*.json")):
            print(f"\n### corpus chain: skipped, no corpus files in {args.corpus_dir}")
            skipped.append(spec)
            continue
        began = time.perf_counter()
        rows = replay(sources[name](), args.max_messages, config=PROFILES[profile]())
        _print_table(f"{name} chain, {profile} profile: time per turn ({time.perf_counter() - began:.0f} s wall)",
                     rows, False)
        if spec in args.memory_runs.split(","):
            rows = replay(sources[name](), args.max_messages, config=PROFILES[profile](), memory=True)
            _print_table(f"{name} chain, {profile} profile: memory (tracemalloc, separate run)", rows, True)
    if skipped:  # a requested run without figures must not look like a complete benchmark
        return nothing_measured(f"run(s) {', '.join(skipped)} found no corpus files in {args.corpus_dir}",
                                "pass --corpus-dir, or --runs without the corpus runs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
