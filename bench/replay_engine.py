"""Benchmark the PentAGI summarizer engine by replaying corpus transcripts turn by turn.

    .venv/bin/python bench/replay_engine.py [--summarizer fake|extractive] [--corpus DIR]

Per corpus file and profile (agent, assistant): engine time per turn (median and p95, summarize time
excluded), summarize calls, raw bytes at the end of the transcript vs bytes of the kept chain, and the share
of the transcript's identifiers (hosts, paths, hashes, ...) still present verbatim in the kept chain.
With the default fake summarizer (a fixed short text) that share is what the engine itself keeps; with
`extractive` it includes what the offline summarizer carries into its summaries.
Exits 3 with a message on stderr when the corpus is absent or empty (nothing measured).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from nothing_measured import nothing_measured  # noqa: E402

from summarizer import SummarizerConfig, chain_bytes, content_text, summarize_chain  # noqa: E402
from summarizer import split_turns as turns  # noqa: E402

try:
    from summarizer import extract_identifiers, missing_identifiers
except ImportError:  # the identifiers module is optional for this benchmark
    extract_identifiers = missing_identifiers = None

Message = dict[str, Any]
DEFAULT_CORPUS = ROOT.parent / "shared" / "corpus"
PROFILES = {"agent": SummarizerConfig.agent(), "assistant": SummarizerConfig.assistant()}


class TimedSummarizer:
    """Wraps the summarize callable and adds up the time spent inside it, so it can be subtracted."""

    def __init__(self, inner: Callable[[str], str]) -> None:
        self.inner, self.seconds = inner, 0.0

    def __call__(self, prompt: str) -> str:
        start = time.perf_counter()
        try:
            return self.inner(prompt)
        finally:
            self.seconds += time.perf_counter() - start


def _chain_text(messages: list[Message]) -> str:
    parts = []
    for msg in messages:
        parts.append(content_text(msg))
        parts.extend(c["function"]["arguments"] for c in msg.get("tool_calls") or () if c.get("function"))
    return "\n".join(parts)


def retention(raw: list[Message], kept: list[Message]) -> float | None:
    if extract_identifiers is None:
        return None
    wanted = extract_identifiers(_chain_text(raw))
    if not wanted:
        return None
    return 1 - len(missing_identifiers(wanted, _chain_text(kept))) / len(wanted)


def replay(messages: list[Message], config: SummarizerConfig, summarize: Callable[[str], str]) -> dict[str, Any]:
    timed = TimedSummarizer(summarize)
    chain: list[Message] = []
    engine_ms: list[float] = []
    calls = 0
    for batch in turns(messages):
        chain = chain + batch
        before = timed.seconds
        start = time.perf_counter()
        result = summarize_chain(chain, config, timed)
        engine_ms.append((time.perf_counter() - start - (timed.seconds - before)) * 1000)
        if result.error:
            raise RuntimeError(result.error)
        chain, calls = result.messages, calls + result.calls
    ordered = sorted(engine_ms)
    return {
        "turns": len(engine_ms), "median_ms": statistics.median(ordered),
        "p95_ms": ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], "calls": calls,
        "bytes_raw": chain_bytes(messages), "bytes_kept": chain_bytes(chain),
        "msgs_raw": len(messages), "msgs_kept": len(chain), "retention": retention(messages, chain),
    }


def _summarizer(kind: str) -> Callable[[str], str]:
    if kind == "extractive":
        from summarizer import make_extractive
        return make_extractive()
    return lambda prompt: "summary of the earlier steps"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--summarizer", choices=("fake", "extractive"), default="fake")
    args = parser.parse_args(argv)
    files = sorted(args.corpus.glob("*.json")) if args.corpus.is_dir() else []
    if not files:
        return nothing_measured(f"no corpus files in {args.corpus}",
                                "point --corpus at a folder of *.json chains (the shared one is ../shared/corpus)")
    summarize = _summarizer(args.summarizer)
    header = f"{'file':<24} {'profile':<9} {'turns':>5} {'med ms':>7} {'p95 ms':>7} {'calls':>5} " \
             f"{'msgs raw>kept':>13} {'bytes raw':>10} {'bytes kept':>10} {'ids kept':>8}"
    print(header)
    print("-" * len(header))
    for path in files:
        messages = json.loads(path.read_text(encoding="utf-8"))["messages"]
        for name, config in PROFILES.items():
            row = replay(messages, config, summarize)
            ids = "n/a" if row["retention"] is None else f"{row['retention']:.0%}"
            print(f"{path.stem:<24} {name:<9} {row['turns']:>5} {row['median_ms']:>7.2f} {row['p95_ms']:>7.2f} "
                  f"{row['calls']:>5} {str(row['msgs_raw']) + '>' + str(row['msgs_kept']):>13} "
                  f"{row['bytes_raw']:>10} {row['bytes_kept']:>10} {ids:>8}")
    if extract_identifiers is None:
        print("ids kept: summarizer.identifiers is not available, column left empty")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
