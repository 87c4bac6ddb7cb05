"""Exceptions of the window-fit layer, in one small module so every part of it can raise them without cycles."""
from __future__ import annotations

__all__ = ["ContextTooLarge", "CompactionFailed", "RetryableProviderError", "SummarizeAborted",
           "OverflowRecoveryFailed"]


class ContextTooLarge(Exception):
    """The part of the view that cannot be reduced does not fit the window (compaction.md §3.2 d).

    Carries the sizes so callers can show them: `tokens` (the smallest view reached), `budget_tokens`
    (window minus reserve), `window_tokens`, `reserve_tokens`, `irreducible_tokens` (system message, newest
    user message and newest tool round of the input, which no step may drop) and `summary_tokens`.
    """

    def __init__(self, *, tokens: int, window_tokens: int, reserve_tokens: int, irreducible_tokens: int,
                 summary_tokens: int = 0) -> None:
        self.tokens = tokens
        self.window_tokens = window_tokens
        self.reserve_tokens = reserve_tokens
        self.budget_tokens = window_tokens - reserve_tokens
        self.irreducible_tokens = irreducible_tokens
        self.summary_tokens = summary_tokens
        summary = f"; the compaction summary takes {summary_tokens}" if summary_tokens else ""
        super().__init__(
            f"context too large: the view needs {tokens} tokens after compaction but only {self.budget_tokens} "
            f"are available (window {window_tokens} - reserve {reserve_tokens}); the part that cannot be "
            f"compacted (system message, newest user message and newest tool round) is {irreducible_tokens} "
            f"tokens{summary}")


class CompactionFailed(RuntimeError):
    """A compaction could not produce an acceptable summary; the previous view was kept (fail closed)."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"compaction failed: {reason}")
        self.reason = reason


class RetryableProviderError(RuntimeError):
    """A provider error worth trying another model for: 5xx, overload, timeout (acceptance fact 61)."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class SummarizeAborted(RuntimeError):
    """The caller cancelled the summary; never retried (acceptance fact 33)."""


class OverflowRecoveryFailed(RuntimeError):
    """The model call kept overflowing the window, or compaction could not help; `compactions` were tried."""

    def __init__(self, reason: str, *, compactions: int) -> None:
        super().__init__(f"context overflow not recovered after {compactions} compaction(s): {reason}")
        self.reason = reason
        self.compactions = compactions
