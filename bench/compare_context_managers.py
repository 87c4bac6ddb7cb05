"""Compaction quality and cost on the shared corpus: our engine next to LangChain, LangMem and truncation.

Every corpus file is replayed turn by turn (a turn ends where the agent would call its model again) through
each context manager (bench/context_managers.py), all summarizing with the same stub model (our offline
extractive summarizer) and all held to the same window: W tokens minus a 20% answer reserve. Per file and
manager it prints, for the view the model receives after the last turn:
  - KiB and tokens before (the raw transcript) and after (the view); the peak view tokens over the replay and
    the number of model calls whose view was over the budget;
  - summarize calls and the KiB they were sent (the cost proxy: what a paid model would bill as input);
  - identifier retention: the identifiers (summarizer.identifiers: hashes, IPs, host:port, paths, URLs, CVE
    ids) of the raw messages the view no longer holds verbatim, and the share of them still found in the view;
    also without the noise classes summaries leave out on purpose (bare numbers, hexdump offsets, library and
    installer paths: summarizer.extractive.facts.is_noise_class), and (pooled) only those the agent itself
    used (its notes or tool calls quote them anywhere in the transcript): what it would look up again, where
    unused banner hex and nonces, which summaries drop first on purpose (issue 23), do not count.
A manager that cannot be installed or driven here gets one row saying why; the others still run.

Usage (scripts/bench runs it in .venv-bench): python bench/compare_context_managers.py [--window 16384]
       [--files pentest-cochise-01,...] [--managers ours-agent,ours-assistant,langchain,langmem,truncation]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from context_managers import (  # noqa: E402
    LangChainSummarization,
    LangMemSummarization,
    Manager,
    Ours,
    OursWindow,
    Truncation,
    budget_tokens,
    normalized,
    split_turns,
)
from nothing_measured import nothing_measured  # noqa: E402

from summarizer import (  # noqa: E402
    DEFAULT_INPUT_TOKENS,
    count_tokens,
    extract_identifiers,
    missing_identifiers,
)
from summarizer.extractive.facts import is_noise_class  # noqa: E402

__all__ = ["Row", "replay_file", "main", "MANAGERS", "view_text"]

Message = dict[str, Any]
CORPUS_DIR = ROOT.parent / "shared" / "corpus"
DEFAULT_WINDOW_TOKENS = 16_384
MANAGERS: dict[str, Callable[[int], Manager]] = {
    "ours-agent": lambda w: Ours(w, "agent"),
    "ours-assistant": lambda w: Ours(w, "assistant"),
    "ours-agent-window": lambda w: OursWindow(w, "agent"),
    "ours-agent-window-bounded": lambda w: OursWindow(w, "agent", input_tokens=DEFAULT_INPUT_TOKENS),
    "ours-agent-window-bounded-model": lambda w: OursWindow(w, "agent", input_tokens=DEFAULT_INPUT_TOKENS,
                                                                       local_folds=False),
    "ours-assistant-window": lambda w: OursWindow(w, "assistant"),
    "langchain": LangChainSummarization,
    "langmem": LangMemSummarization,
    "truncation": Truncation,
}


@dataclass
class Row:
    file: str
    manager: str
    raw_kib: float = 0.0
    raw_tokens: int = 0
    view_kib: float = 0.0
    view_tokens: int = 0
    peak_tokens: int = 0
    over_budget: int = 0
    refused: int = 0
    turns: int = 0
    calls: int = 0
    input_kib: float = 0.0
    ids_replaced: int = 0
    ids_kept: int = 0
    signal_replaced: int = 0
    signal_kept: int = 0
    used_replaced: int = 0
    used_kept: int = 0
    seconds: float = 0.0
    error: str = ""

    @property
    def retention(self) -> str:
        return f"{100 * self.ids_kept / self.ids_replaced:.0f}%" if self.ids_replaced else "n/a"

    @property
    def signal_retention(self) -> str:
        return f"{100 * self.signal_kept / self.signal_replaced:.0f}%" if self.signal_replaced else "n/a"


def _kib(messages: list[Message]) -> float:
    return sum(len(json.dumps(m, ensure_ascii=False).encode()) for m in messages) / 1024


def _content_text(content: Any) -> str:
    """A message's content as the model reads it: a list of parts is its text parts, one after the other (a
    JSON dump would escape every backslash and newline, so "ESSOS\\krbtgt" in a summary would not be found)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in content)
    return "" if content is None else json.dumps(content, ensure_ascii=False)


def view_text(messages: list[Message]) -> str:
    """Everything a model reads in these messages: contents and tool-call arguments."""
    parts = []
    for m in messages:
        parts.append(_content_text(m.get("content")))
        parts.extend(str((c.get("function") or {}).get("arguments") or "") for c in m.get("tool_calls") or [])
    return "\n".join(parts)


def retention(raw: list[Message], view: list[Message], *, noise: bool = True,
              used_only: bool = False) -> tuple[int, int]:
    """(identifiers of the raw messages no longer in the view verbatim, how many of them the view still has);
    `noise=False` leaves the noise classes out of both counts, `used_only` counts only the identifiers the
    agent's own messages (content or tool-call arguments) quote somewhere in `raw`."""
    kept = {normalized(m) for m in view}
    replaced = [m for m in raw if normalized(m) not in kept]
    ids = [i for i in extract_identifiers(view_text(replaced)) if noise or not is_noise_class(i)]
    if used_only:
        agent = view_text([m for m in raw if m.get("role") == "assistant"])
        ids = [i for i in ids if not missing_identifiers([i], agent)]
    return len(ids), len(ids) - len(missing_identifiers(ids, view_text(view)))


def replay_file(path: Path, key: str, window_tokens: int) -> Row:
    raw: list[Message] = json.loads(path.read_text(encoding="utf-8"))["messages"]
    row = Row(file=path.stem, manager=key, raw_kib=_kib(raw), raw_tokens=count_tokens(raw))
    try:
        manager = MANAGERS[key](window_tokens)
    except ImportError as exc:
        row.error = f"not installed here: {exc}"
        return row
    row.manager = manager.name
    budget, began = budget_tokens(window_tokens), time.perf_counter()
    try:
        for turn in split_turns(raw):
            manager.turn(turn)
            tokens = count_tokens(manager.view())
            row.peak_tokens, row.turns = max(row.peak_tokens, tokens), row.turns + 1
            row.over_budget += tokens > budget
    except Exception as exc:  # noqa: BLE001 - one manager failing must not hide the others' figures
        row.error = f"failed at turn {row.turns + 1}: {type(exc).__name__}: {str(exc)[:160]}"
    view = manager.view()
    row.view_kib, row.view_tokens = _kib(view), count_tokens(view)
    row.calls, row.input_kib = manager.model.calls, manager.model.input_bytes / 1024
    row.refused = manager.refused
    row.ids_replaced, row.ids_kept = retention(raw, view)
    row.signal_replaced, row.signal_kept = retention(raw, view, noise=False)
    row.used_replaced, row.used_kept = retention(raw, view, used_only=True)
    row.seconds = time.perf_counter() - began
    return row


def _refused(row: Row) -> str:
    return f" ({row.refused})" if row.refused else ""


def _print_rows(rows: list[Row]) -> None:
    print("| file | manager | KiB before → after | tokens before → after | peak tokens | calls over budget "
          "(ContextTooLarge) | summarize calls | input KiB | ids replaced | ids retained | without noise | s |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        if r.error and not r.turns:
            print(f"| {r.file} | {r.manager} | {r.error} ||||||||||")
            continue
        note = f" ({r.error})" if r.error else ""
        print(f"| {r.file} | {r.manager}{note} | {r.raw_kib:,.0f} → {r.view_kib:,.0f} "
              f"| {r.raw_tokens:,} → {r.view_tokens:,} | {r.peak_tokens:,} | {r.over_budget}/{r.turns}{_refused(r)} "
              f"| {r.calls} | {r.input_kib:,.0f} | {r.ids_replaced} | {r.retention} | {r.signal_retention} "
              f"| {r.seconds:.1f} |")


def _refused_total(rows: list[Row]) -> str:
    total = sum(r.refused for r in rows)
    return f" ({total})" if total else ""


def _print_totals(rows: list[Row]) -> None:
    print("\n| manager | files | view tokens (sum) | calls over budget (ContextTooLarge) | summarize calls | input KiB "
          "| ids retained (pooled) | without noise (pooled) | used by the agent (pooled) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name in dict.fromkeys(r.manager for r in rows):
        mine = [r for r in rows if r.manager == name and r.turns]
        if not mine:
            reason = next(r.error for r in rows if r.manager == name)
            print(f"| {name} | 0 | {reason} |||||||")
            continue
        replaced, kept = sum(r.ids_replaced for r in mine), sum(r.ids_kept for r in mine)
        share = f"{100 * kept / replaced:.0f}% of {replaced:,}" if replaced else "n/a"
        signal, signal_kept = sum(r.signal_replaced for r in mine), sum(r.signal_kept for r in mine)
        share += f" | {100 * signal_kept / signal:.0f}% of {signal:,}" if signal else " | n/a"
        used, used_kept = sum(r.used_replaced for r in mine), sum(r.used_kept for r in mine)
        share += f" | {100 * used_kept / used:.0f}% of {used:,}" if used else " | n/a"
        print(f"| {name} | {len(mine)} | {sum(r.view_tokens for r in mine):,} "
              f"| {sum(r.over_budget for r in mine)}/{sum(r.turns for r in mine)}{_refused_total(mine)} "
              f"| {sum(r.calls for r in mine)} "
              f"| {sum(r.input_kib for r in mine):,.0f} | {share} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--window", type=int, default=DEFAULT_WINDOW_TOKENS, help="model window in tokens")
    parser.add_argument("--corpus-dir", type=Path, default=CORPUS_DIR)
    parser.add_argument("--files", default="", help="comma list of corpus file stems (default: all)")
    parser.add_argument("--managers", default=",".join(MANAGERS), help="comma list of " + ", ".join(MANAGERS))
    args = parser.parse_args(argv)
    files = sorted(args.corpus_dir.glob("*.json"))
    if args.files:
        wanted = set(args.files.split(","))
        files = [f for f in files if f.stem in wanted]
    if not files:
        which = f" matching --files {args.files}" if args.files else ""
        return nothing_measured(f"no corpus files{which} in {args.corpus_dir}",
                                "point --corpus-dir at a folder of *.json chains (the shared one is ../shared/corpus)")
    keys = [k for k in args.managers.split(",") if k]
    unknown = [k for k in keys if k not in MANAGERS]
    if unknown:
        parser.error(f"unknown managers {unknown}")
    print(f"## Context managers on the corpus (window {args.window:,} tokens, budget "
          f"{budget_tokens(args.window):,} after the 20% answer reserve; stub model: extractive summarizer)\n")
    rows = [replay_file(path, key, args.window) for path in files for key in keys]
    _print_rows(rows)
    _print_totals(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
