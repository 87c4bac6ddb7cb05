"""Window fit over the shared corpus: tokens before/after, summary calls, time, identifier retention.

For every corpus file and window (16k / 32k / 128k) the file is fitted twice with the offline extractive
summarizer and the strict identifier policy:
  - "fit": the full §3 order (restore profile first, then window cut, truncation);
  - "cut": the restore step disabled, so the window cut and its audited summary do the work.
Identifier retention = share of the opaque identifiers of the input (compaction.md §6) still present in the
fitted view, compared the way the audit compares them (hex case-insensitive). A failed compaction (audit
failed twice, fail closed) or ContextTooLarge is reported as such, not hidden.

Usage: .venv/bin/python bench/fit_window.py [--corpus ../shared/corpus] [--windows 16000,32000,128000]
Exits 3 with a message on stderr when the corpus directory is absent or empty (nothing measured).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from nothing_measured import nothing_measured  # noqa: E402

from summarizer import (  # noqa: E402
    ContextTooLarge,
    SummarizerConfig,
    extract_identifiers,
    fit_to_window,
    make_extractive,
    missing_identifiers,
)
from summarizer.compact.prompt import render_messages  # noqa: E402

__all__ = ["fit_row", "main"]

DEFAULT_CORPUS = ROOT.parent / "shared" / "corpus"
DEFAULT_WINDOWS = (16_000, 32_000, 128_000)
NO_RESTORE = SummarizerConfig(preserve_last=False, use_qa=False, keep_qa_sections=1000)
# Large enough that the whole view text is scanned, so retention is not capped by truncation of the render.
RENDER_CHARS = 10**9


def _retention(before: list[str], view: list[dict[str, Any]]) -> float:
    if not before:
        return 1.0
    text = render_messages(view, max_message_chars=RENDER_CHARS)
    return 1 - len(missing_identifiers(before, text)) / len(before)


def fit_row(messages: list[dict[str, Any]], window: int, *, restore: bool) -> dict[str, Any]:
    ids = extract_identifiers(render_messages(messages, max_message_chars=RENDER_CHARS))
    summarize = make_extractive()
    start = time.perf_counter()
    try:
        result = fit_to_window(messages, window_tokens=window, summarize=summarize,
                               config=None if restore else NO_RESTORE)
        outcome = "error: " + result.error[:60] if result.error else ("ok" if result.fits else "over budget")
    except ContextTooLarge as error:
        result, outcome = error.partial, "context too large"
    seconds = time.perf_counter() - start
    return {"before": result.tokens_before, "after": result.tokens, "calls": result.calls,
            "steps": "+".join(result.steps) or "-", "seconds": seconds, "ids": len(ids),
            "retained": _retention(ids, result.messages), "outcome": outcome}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--windows", default=",".join(str(w) for w in DEFAULT_WINDOWS))
    args = parser.parse_args(argv)
    files = sorted(args.corpus.glob("*.json")) if args.corpus.is_dir() else []
    if not files:
        return nothing_measured(f"no corpus files in {args.corpus}",
                                "point --corpus at a folder of *.json chains (the shared one is ../shared/corpus)")
    windows = [int(w) for w in args.windows.split(",") if w.strip()]
    header = f"{'file':24} {'window':>7} {'mode':4} {'before':>7} {'after':>7} {'calls':>5} {'time s':>7} " \
             f"{'ids':>5} {'kept':>6}  steps / outcome"
    print(header)
    print("-" * len(header))
    for path in files:
        messages = json.loads(path.read_text(encoding="utf-8"))["messages"]
        for window in windows:
            for mode, restore in (("fit", True), ("cut", False)):
                r = fit_row(messages, window, restore=restore)
                print(f"{path.stem:24} {window:>7} {mode:4} {r['before']:>7} {r['after']:>7} {r['calls']:>5} "
                      f"{r['seconds']:>7.2f} {r['ids']:>5} {r['retained']:>6.1%}  {r['steps']} / {r['outcome']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
