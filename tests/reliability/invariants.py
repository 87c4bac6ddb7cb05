"""Checks shared by the reliability tests: nothing half-written, no server error, chains whole and in order."""
from __future__ import annotations

from typing import Any

from flows.models import (
    Agent,
    ApiToken,
    Chain,
    ChainView,
    Flow,
    LLMCall,
    MemoryNote,
    Message,
    ProviderConfig,
    SettingsChange,
    SummarizerSettings,
    SummaryEvent,
    ViewSection,
)

__all__ = ["row_counts", "assert_client_error", "assert_chain_intact", "MODELS_WRITTEN_BY_REQUESTS"]

MODELS_WRITTEN_BY_REQUESTS = (Flow, Agent, Chain, Message, ChainView, ViewSection, SummaryEvent, MemoryNote,
                              SummarizerSettings, SettingsChange, ProviderConfig, LLMCall, ApiToken)


def row_counts() -> dict[str, int]:
    """Rows per table a request could write to; equal before and after means nothing was written.

    The two profile-default settings rows are created on first read (flows.config.registry.settings_for), so
    only per-flow settings rows count; changes to the defaults show up as SettingsChange rows."""
    counts = {model.__name__: model.objects.count() for model in MODELS_WRITTEN_BY_REQUESTS}
    counts["SummarizerSettings"] = SummarizerSettings.objects.filter(flow__isnull=False).count()
    return counts


def assert_client_error(response: Any) -> None:
    """A rejection is a 4xx with the API's JSON error shape (never a 500, never an HTML page)."""
    assert 400 <= response.status_code < 500, (response.status_code, response.content[:300])
    body = response.json()
    assert isinstance(body.get("error"), str) and body["error"], body


def assert_chain_intact(chain: Chain, expected: list[dict[str, Any]] | None = None) -> None:
    """Seqs are 1..last_seq without a gap or a repeat; with `expected`, the rows are exactly those messages."""
    chain.refresh_from_db()
    seqs = list(Message.objects.filter(chain=chain).order_by("seq").values_list("seq", flat=True))
    assert seqs == list(range(1, chain.last_seq + 1))
    if expected is not None:
        stored = [m.to_dict() for m in Message.objects.filter(chain=chain).order_by("seq")]
        assert [(m["role"], m.get("content"), m.get("tool_call_id", "") or "") for m in stored] == \
            [(m["role"], m.get("content"), m.get("tool_call_id", "") or "") for m in expected]
