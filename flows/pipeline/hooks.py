"""Integration hooks around compaction (compaction.md §8): `before_compaction` and `after_compaction`.

Receivers get keyword arguments `chain_id`, `trigger`, `message_count`, `token_count` and, after compaction,
`compacted_count` (messages that left the view) and `event_id`. A receiver that raises is logged and ignored:
an integration must never be able to break summarization.
"""
from __future__ import annotations

import logging
from typing import Any

from django.dispatch import Signal

__all__ = ["before_compaction", "after_compaction", "send_hook"]

log = logging.getLogger(__name__)

before_compaction = Signal()
after_compaction = Signal()


def send_hook(signal: Signal, **payload: Any) -> None:
    """Send `signal` to every receiver; failures are logged with their receiver and never propagate."""
    for receiver, result in signal.send_robust(sender=None, **payload):
        if isinstance(result, BaseException):
            log.error("compaction hook %r failed: %s", receiver, result, exc_info=result)
