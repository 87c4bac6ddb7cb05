"""The gateway's one door to the summarizer engine (re-point here when the app's engine facade moves)."""
from __future__ import annotations

from typing import Any

from summarizer import count_tokens, is_context_overflow_error, observed_token_count, prune_view, validate_messages

__all__ = ["check_message", "estimate_tokens", "is_overflow", "overflow_tokens", "pruned"]


def estimate_tokens(messages: list[dict[str, Any]], model: str) -> int:
    return count_tokens(messages, model=model or None)


def is_overflow(error_text: str) -> bool:
    return bool(error_text) and is_context_overflow_error(error_text)


def overflow_tokens(error_text: str) -> int | None:
    return observed_token_count(error_text)


def pruned(messages: list[dict[str, Any]], *, window_tokens: int, settings: Any) -> list[dict[str, Any]]:
    """Old tool results trimmed for this one request (nothing stored); unchanged when pruning is off."""
    return list(prune_view(messages, window_tokens=window_tokens, settings=settings))


def check_message(message: dict[str, Any]) -> None:
    """Raise (MessageError) unless `message` is a valid chain message."""
    validate_messages([message])
