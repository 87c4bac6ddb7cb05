"""The one way a benchmark says it found nothing to measure: a clear message on stderr and a non-zero exit.

A benchmark that prints "nothing to compare" and exits 0 looks like a successful run in scripts and CI, and
the README's figures silently go stale; so an empty corpus (or a filter matching no file) is a failure.
"""
from __future__ import annotations

import sys

__all__ = ["NOTHING_MEASURED_EXIT", "nothing_measured"]

NOTHING_MEASURED_EXIT = 3  # distinct from argparse's 2 (usage) and a crash's 1


def nothing_measured(reason: str, hint: str = "pass --help for the options") -> int:
    """Print why nothing was measured and return the exit status the script's main() returns."""
    print(f"error: nothing to measure: {reason}; {hint}", file=sys.stderr)
    return NOTHING_MEASURED_EXIT
