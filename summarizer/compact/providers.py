"""Pluggable compaction providers (compaction.md §6, acceptance fact 49).

An integration registers `summarize(prompt) -> str` under an id; a settings row naming that id makes the
compaction use it instead of the built-in LLM path. The provider receives exactly the prompt the built-in
path would get (same structured instructions), and whatever the compaction appends after the summary (the
split-turn context) is appended after the provider's output too. A provider that raises or returns nothing
is logged and the built-in path answers instead: a plugin bug must never cost the agent its history.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable

__all__ = ["register_compaction_provider", "unregister_compaction_provider", "get_compaction_provider",
           "registered_compaction_providers", "with_compaction_provider"]

log = logging.getLogger(__name__)
Summarize = Callable[[str], str]
_providers: dict[str, Summarize] = {}
_lock = threading.Lock()


def register_compaction_provider(provider_id: str, summarize: Summarize) -> None:
    """Register (or replace) the provider `provider_id`."""
    if not isinstance(provider_id, str) or not provider_id.strip():
        raise ValueError("a compaction provider id must be a non-empty string")
    if not callable(summarize):
        raise TypeError("a compaction provider must be callable: summarize(prompt) -> str")
    with _lock:
        _providers[provider_id.strip()] = summarize


def unregister_compaction_provider(provider_id: str) -> bool:
    """Remove a provider; True when it was registered."""
    with _lock:
        return _providers.pop(provider_id.strip(), None) is not None


def get_compaction_provider(provider_id: str | None) -> Summarize | None:
    if not provider_id or not provider_id.strip():
        return None
    with _lock:
        return _providers.get(provider_id.strip())


def registered_compaction_providers() -> list[str]:
    with _lock:
        return sorted(_providers)


def with_compaction_provider(provider_id: str | None, builtin: Summarize) -> Summarize:
    """`builtin` itself when no provider is configured; else a callable trying the provider first.

    An unknown id is logged once per call and the built-in path is used.
    """
    if not provider_id or not provider_id.strip():
        return builtin

    def summarize(prompt: str) -> str:
        provider = get_compaction_provider(provider_id)
        if provider is None:
            log.warning("compaction provider %r is not registered; using the built-in summarizer", provider_id)
            return builtin(prompt)
        try:
            out = provider(prompt)
        except Exception:  # a plugin failure falls back, it never fails the compaction
            log.exception("compaction provider %r failed; using the built-in summarizer", provider_id)
            return builtin(prompt)
        if not isinstance(out, str) or not out.strip():
            log.warning("compaction provider %r returned no text; using the built-in summarizer", provider_id)
            return builtin(prompt)
        return out

    return summarize
