"""Settings preview: what view would these settings give on this chain? Nothing is saved.

Runs synchronously on the request path, so it always uses the offline extractive summarizer (fast,
deterministic; no model endpoint is called) and a fixed seed for generated summary-call ids.
"""
from __future__ import annotations

import copy
import random
from typing import Any

from flows.config import settings_for, settings_validate
from flows.engine import (
    COMPACTION_SYSTEM_PROMPT,
    SUMMARY_SYSTEM_PROMPT,
    ContextTooLarge,
    fit_to_window,
    is_case_insensitive_id,
    make_extractive,
    missing_identifiers,
)
from flows.models import Chain, SummarizerSettings
from flows.pipeline import view_records as records
from flows.pipeline.fitting import restores
from flows.pipeline.memory import identifier_text
from flows.pipeline.preview_cache import ChainData, cached_summarizer, chain_data, identifiers_of
from flows.pipeline.runs import view_current, window_for
from flows.pipeline.strategy import summarize_by_strategy
from flows.pipeline.summarizers import InputCounter, SummarizeFn

__all__ = ["PREVIEW_SEED", "chain_preview", "identifier_retention"]

PREVIEW_SEED = 0


def _effective_row(chain: Chain, settings: dict[str, Any]) -> SummarizerSettings:
    """The chain's settings row with `settings` applied on top, unsaved (raises SettingsError on bad values)."""
    base = settings_for(profile=chain.agent.profile, flow=chain.agent.flow)
    cleaned = settings_validate(settings, base=base)
    row = copy.copy(base)
    row.pk = None  # a detached copy: a stray save() would insert, never overwrite the real settings
    for name, value in cleaned.items():
        setattr(row, name, value)
    return row


def identifier_retention(data: ChainData, view: list[dict[str, Any]], lineage: list[list[int]],
                         fresh: list[bool]) -> float | None:
    """Share of the identifiers in raw messages replaced by summaries that still appear in the view text.

    Each raw message's identifiers are extracted once per chain (preview_cache), not on every preview."""
    replaced = {s for lin, new in zip(lineage, fresh, strict=False) if new for s in lin}
    ids: dict[str, str] = {}
    for message, seq in zip(data.raw, data.seqs, strict=True):
        if seq in replaced:
            for value in identifiers_of(data, seq, message):
                ids.setdefault(value.upper() if is_case_insensitive_id(value) else value, value)
    if not ids:
        return None
    missing = missing_identifiers(list(ids.values()), "\n".join(identifier_text(m) for m in view))
    return round(1 - len(missing) / len(ids), 4)


def _fit(chain: Chain, row: SummarizerSettings, view: list[dict[str, Any]], lineage: list[list[int]],
         summarize: SummarizeFn) -> tuple[list[dict[str, Any]], list[list[int]], int, dict[str, Any]]:
    window = window_for(flow=chain.agent.flow, row=row, chain_id=chain.pk) if row.compaction_enabled else None
    if window is None:
        return view, lineage, 0, {"known": False}
    info: dict[str, Any] = {"known": True, "tokens": window[0], "reserve_tokens": window[1]}
    try:
        fit = fit_to_window(view, window_tokens=window[0], summarize=summarize, model=chain.agent.flow.model_name
                            or None, reserve_tokens=window[1], keep_recent_tokens=row.keep_recent_tokens,
                            identifier_policy=row.identifier_policy,
                            identifier_instructions=row.identifier_instructions, restore=restores(row))
    except ContextTooLarge as exc:
        info["error"] = str(exc)
        return view, lineage, 0, info
    if fit.error:
        info["error"] = fit.error
        return view, lineage, fit.calls, info
    fit_lineage = getattr(fit, "lineage", None)
    lineage = (records.compose_lineage(fit_lineage, lineage) if fit_lineage is not None
               else records.align_lineage(fit.messages, view, lineage))
    info["compacted"] = bool(getattr(fit, "compacted", fit.messages != view))
    return list(fit.messages), lineage, int(getattr(fit, "calls", 0) or 0), info


def chain_preview(*, chain: Chain, settings: dict[str, Any]) -> dict[str, Any]:
    """The view `settings` would give on the chain's raw messages (extractive summarizer; nothing saved)."""
    row = _effective_row(chain, settings)
    model = chain.agent.flow.model_name or None
    data = chain_data(chain=chain, model=model)
    raw, seqs = copy.deepcopy(data.raw), data.seqs  # the cached messages must outlive whatever the engine does
    # deterministic, so a repeated prompt has the same answer; counted, so the page shows what the run would bill
    summarize = InputCounter(cached_summarizer(make_extractive()), SUMMARY_SYSTEM_PROMPT)
    result = summarize_by_strategy(raw, flow=chain.agent.flow, row=row, chain_id=chain.pk, summarize=summarize,
                                   id_template=chain.tool_call_id_template or None, lineage_in=[[s] for s in seqs],
                                   rng=random.Random(PREVIEW_SEED))
    view, lineage = result.messages, [list(x) for x in result.lineage]
    window: dict[str, Any] = {"known": False}
    if result.error is None:
        view, lineage, _fit_calls, window = _fit(chain, row, view, lineage,
                                                 summarize.with_system(COMPACTION_SYSTEM_PROMPT))
    window["strategy"] = result.stats.get("window") or {"strategy": "pentagi"}
    fresh = records.fresh_mask(view, raw)
    bytes_before, bytes_after = data.bytes, records.view_bytes(view)
    tokens_before, tokens_after = data.tokens, records.view_tokens(view, model=model)
    current = view_current(chain=chain)
    return {
        "view": view, "lineage": lineage, "sections": records.section_records(view, lineage), "window": window,
        "error": result.error,
        "stats": {"bytes_before": bytes_before, "bytes_after": bytes_after, "tokens_before": tokens_before,
                  "tokens_after": tokens_after, "calls": summarize.calls, "input_bytes": summarize.input,
                  "bytes_saved": bytes_before - bytes_after,
                  "tokens_saved": tokens_before - tokens_after,
                  "identifier_retention": identifier_retention(data, view, lineage, fresh)},
        "current": ({"bytes": current.byte_size, "tokens": current.token_count, "messages": len(current.messages)}
                    if current else {"bytes": bytes_before, "tokens": tokens_before, "messages": len(raw)}),
    }
