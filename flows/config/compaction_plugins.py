"""Installed compaction providers, loaded from the `pentagi_web.compaction_providers` entry-point group.

A package declares, in its pyproject.toml,

    [project.entry-points."pentagi_web.compaction_providers"]
    acme = "acme_compaction:summarize"

and `summarize(prompt: str) -> str` is registered under the id `acme` when the app starts (web and worker
processes alike), so the settings offer it by name. A provider that cannot be loaded is logged and skipped:
one broken plugin must not stop the dashboard.
"""
from __future__ import annotations

import logging
from importlib.metadata import entry_points

from flows.engine import register_compaction_provider

__all__ = ["ENTRY_POINT_GROUP", "load_compaction_providers"]

ENTRY_POINT_GROUP = "pentagi_web.compaction_providers"
log = logging.getLogger(__name__)


def load_compaction_providers(group: str = ENTRY_POINT_GROUP) -> dict[str, str]:
    """Register every provider of the group; {id: reason} for the ones that could not be loaded."""
    failed: dict[str, str] = {}
    for entry in entry_points(group=group):
        try:
            provider = entry.load()
            register_compaction_provider(entry.name, provider)
        except Exception as exc:  # any plugin bug (import error, not callable) skips that plugin only
            failed[entry.name] = f"{type(exc).__name__}: {exc}"
            log.warning("compaction provider %r (%s) not loaded: %s", entry.name, entry.value, failed[entry.name])
    return failed
