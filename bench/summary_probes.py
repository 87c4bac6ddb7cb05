"""Probe facts: does the view an agent receives still hold what it needs to carry on?

For every corpus file with a fact list in bench/probes/ (facts an agent continuing the work needs, written by
reading the transcript: findings, credentials, negative results, the current step; each fact is kept when any
of its spellings occurs verbatim in the view), the file is replayed turn by turn (bench/context_managers.py)
at a window small enough that most of the history is summarized. Per file and manager it prints:
  - facts kept: how many of the file's facts the final view still holds;
  - compression: raw transcript tokens / final view tokens;
  - identifier share: of the view's summary text (messages that are not verbatim raw messages), the share of
    bytes that sits in identifier-list lines ("Identifiers:", "- identifiers:", "## Exact identifiers" items);
  - repeated headings: summaries in the view that repeat a title or heading line;
  - p95 time per turn (the manager's whole turn), and for ours also p95 per summarize call of the extractive
    summarizer, the figure issue 11 compares with LangMem's per-turn p95.
Every manager summarizes with the same stub model (our extractive summarizer), so differences come from the
policy and the summary layout. LangChain and LangMem run only in .venv-bench (scripts/bench); where they are
missing their rows say so. A run that finds nothing to compare (no corpus, no probes, no manager) exits 1.

Usage: python bench/summary_probes.py [--window 8192] [--files pentest-cochise-01,...] [--managers ...]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from compare_context_managers import view_text  # noqa: E402
from context_managers import (  # noqa: E402
    LangChainSummarization,
    LangMemSummarization,
    Manager,
    Ours,
    OursWindow,
    normalized,
    split_turns,
)

from summarizer import DEFAULT_INPUT_TOKENS, count_tokens  # noqa: E402

__all__ = ["ProbeRow", "probe_file", "facts_kept", "identifier_share", "repeated_headings", "main"]

Message = dict[str, Any]
CORPUS_DIR = ROOT.parent / "shared" / "corpus"
PROBES_DIR = ROOT / "bench" / "probes"
DEFAULT_WINDOW_TOKENS = 8192
MANAGERS = {"ours-agent": lambda w: Ours(w, "agent"), "ours-agent-window": lambda w: OursWindow(w, "agent"),
            "ours-agent-window-bounded": lambda w: OursWindow(w, "agent", input_tokens=DEFAULT_INPUT_TOKENS),
            "ours-agent-window-bounded-model": lambda w: OursWindow(w, "agent", input_tokens=DEFAULT_INPUT_TOKENS,
                                                                       local_folds=False),
            "langchain": LangChainSummarization,
            "langmem": LangMemSummarization}
_ID_LINE_PREFIXES = ("Identifiers:", "- identifiers:", "- also in tool output:")


@dataclass
class ProbeRow:
    file: str
    manager: str
    facts: int = 0
    kept: int = 0
    missed: list[str] = field(default_factory=list)
    raw_tokens: int = 0
    view_tokens: int = 0
    id_share: float = 0.0
    repeated: int = 0
    turn_seconds: list[float] = field(default_factory=list)
    call_seconds: list[float] = field(default_factory=list)
    calls: int = 0
    input_bytes: int = 0
    error: str = ""
    held_back: bool = False

    @property
    def compression(self) -> float:
        return self.raw_tokens / self.view_tokens if self.view_tokens else 0.0


def facts_kept(facts: list[dict[str, Any]], view: list[Message]) -> list[str]:
    """The `what` of every fact none of whose spellings occurs in the view."""
    text = view_text(view)
    return [f["what"] for f in facts if not any(spelling in text for spelling in f["any_of"])]


def _summaries(raw: list[Message], view: list[Message]) -> list[str]:
    verbatim = {normalized(m) for m in raw}
    return [view_text([m]) for m in view if normalized(m) not in verbatim and m.get("role") != "system"]


def identifier_share(summaries: list[str]) -> float:
    """Bytes of identifier-list lines over all bytes of the summaries (0 when there is no summary)."""
    total = listed = 0
    for summary in summaries:
        in_ids_heading = False
        for line in summary.splitlines():
            size = len(line.encode("utf-8")) + 1
            total += size
            if line.startswith("#"):
                in_ids_heading = "identifier" in line.lower()
                continue
            if in_ids_heading or line.startswith(_ID_LINE_PREFIXES):
                listed += size
    return listed / total if total else 0.0


def repeated_headings(summaries: list[str]) -> int:
    """Summaries with a title line ("Findings:") or Markdown heading that occurs twice in them."""
    count = 0
    for summary in summaries:
        titles = [line.strip() for line in summary.splitlines()
                  if line.startswith("#") or (line.endswith(":") and not line.startswith((" ", "-", ">")))]
        count += bool(titles) and max(Counter(titles).values()) > 1
    return count


class _TimedModel:
    """Wraps a manager's stub summarize callable to time each call."""

    def __init__(self, inner: Any, seconds: list[float]) -> None:
        self.inner, self.seconds = inner, seconds

    def __call__(self, text: str) -> str:
        began = time.perf_counter()
        try:
            return self.inner(text)
        finally:
            self.seconds.append(time.perf_counter() - began)


def probe_file(transcript: Path, facts: list[dict[str, Any]], key: str, window_tokens: int,
               held_back: bool = False) -> ProbeRow:
    raw: list[Message] = json.loads(transcript.read_text(encoding="utf-8"))["messages"]
    row = ProbeRow(transcript.stem, key, facts=len(facts), raw_tokens=count_tokens(raw), held_back=held_back)
    try:
        manager: Manager = MANAGERS[key](window_tokens)
    except ImportError as exc:
        row.error = f"not installed here: {exc}"
        return row
    row.manager = manager.name
    manager.model._summarize = _TimedModel(manager.model._summarize, row.call_seconds)
    try:
        for turn in split_turns(raw):
            began = time.perf_counter()
            manager.turn(turn)
            manager.view()
            row.turn_seconds.append(time.perf_counter() - began)
    except Exception as exc:  # noqa: BLE001 - one manager failing must not hide the others' figures
        row.error = f"failed after {len(row.turn_seconds)} turns: {type(exc).__name__}: {str(exc)[:160]}"
    view = manager.view()
    row.missed = facts_kept(facts, view)
    row.kept = row.facts - len(row.missed)
    row.view_tokens = count_tokens(view)
    row.calls, row.input_bytes = manager.model.calls, manager.model.input_bytes
    summaries = _summaries(raw, view)
    row.id_share, row.repeated = identifier_share(summaries), repeated_headings(summaries)
    return row


def _p95(values: list[float]) -> float:
    if len(values) < 2:
        return values[0] if values else 0.0
    return statistics.quantiles(values, n=20, method="inclusive")[18]


def _ms(values: list[float]) -> str:
    return f"{1000 * _p95(values):.0f}" if values else "–"


def _print(rows: list[ProbeRow]) -> None:
    print("| file | manager | facts kept | compression | identifier share | repeated headings "
          "| p95 ms per turn | p95 ms per summary call | missed |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        if r.error and not r.turn_seconds:
            print(f"| {r.file} | {r.manager} | {r.error} |||||||")
            continue
        note = f" ({r.error})" if r.error else ""
        held = " (held back)" if r.held_back else ""
        print(f"| {r.file}{held} | {r.manager}{note} | {r.kept}/{r.facts} | {r.compression:.1f}× | {r.id_share:.0%} "
              f"| {r.repeated} | {_ms(r.turn_seconds)} | {_ms(r.call_seconds)} | {'; '.join(r.missed)} |")
    print("\n| manager | files | facts kept | compression (pooled tokens) | identifier share (mean) "
          "| repeated headings | p95 ms per turn | p95 ms per summary call | summarize calls | input KiB |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name in dict.fromkeys(r.manager for r in rows):
        mine = [r for r in rows if r.manager == name and r.turn_seconds]
        if not mine:
            print(f"| {name} | 0 | {next(r.error for r in rows if r.manager == name)} ||||||")
            continue
        _print_total(name, "all", mine)
        for label, held in (("tuned on", False), ("held back", True)):
            part = [r for r in mine if r.held_back is held]
            if part and len(part) < len(mine):
                _print_total(name, label, part)


def _print_total(name: str, label: str, mine: list[ProbeRow]) -> None:
    """One total row; held-back files (never used while tuning) get their own, the honest figure."""
    facts, kept = sum(r.facts for r in mine), sum(r.kept for r in mine)
    pooled = sum(r.raw_tokens for r in mine) / max(sum(r.view_tokens for r in mine), 1)
    share = statistics.mean(r.id_share for r in mine)
    turns = [s for r in mine for s in r.turn_seconds]
    calls = [s for r in mine for s in r.call_seconds]
    print(f"| {name} ({label}) | {len(mine)} | {kept}/{facts} ({kept / max(facts, 1):.0%}) | {pooled:.1f}× "
          f"| {share:.0%} | {sum(r.repeated for r in mine)} | {_ms(turns)} | {_ms(calls)} "
          f"| {sum(r.calls for r in mine)} | {sum(r.input_bytes for r in mine) / 1024:,.0f} |")


def _probes(directory: Path, wanted: set[str]) -> list[tuple[str, list[dict[str, Any]], bool]]:
    """(corpus file, facts, held back) per fact list; `"held_back": true` marks a file kept out of tuning."""
    out = []
    for path in sorted(directory.glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        if not wanted or Path(doc["file"]).stem in wanted:
            out.append((doc["file"], doc["facts"], bool(doc.get("held_back"))))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--window", type=int, default=DEFAULT_WINDOW_TOKENS, help="model window in tokens")
    parser.add_argument("--corpus-dir", type=Path, default=CORPUS_DIR)
    parser.add_argument("--probes-dir", type=Path, default=PROBES_DIR)
    parser.add_argument("--files", default="", help="comma list of corpus file stems (default: all with probes)")
    parser.add_argument("--managers", default=",".join(MANAGERS), help="comma list of " + ", ".join(MANAGERS))
    args = parser.parse_args(argv)
    keys = [k for k in args.managers.split(",") if k]
    unknown = [k for k in keys if k not in MANAGERS]
    if unknown:
        parser.error(f"unknown managers {unknown}")
    probes = [(args.corpus_dir / name, facts, held) for name, facts, held in _probes(args.probes_dir, set(filter(
              None, args.files.split(","))))]
    probes = [(path, facts, held) for path, facts, held in probes if path.is_file()]
    if not probes or not keys:
        print(f"nothing to compare: no corpus file in {args.corpus_dir} has a fact list in {args.probes_dir}",
              file=sys.stderr)
        return 1
    print(f"## Probe facts after a turn-by-turn replay (window {args.window:,} tokens; stub model: extractive "
          f"summarizer; {sum(len(f) for _, f, _ in probes)} facts in {len(probes)} files)\n")
    rows = [probe_file(path, facts, key, args.window, held) for path, facts, held in probes for key in keys]
    _print(rows)
    ran = {r.manager for r in rows if r.turn_seconds}
    if not ran:
        print("nothing to compare: no manager could run", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
