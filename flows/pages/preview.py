"""The settings page's preview: the pipeline's `chain_preview` shaped for the template (nothing is saved)."""
from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from flows.config import SettingsError
from flows.models import ChainView
from flows.pages.chain_layout import view_rows
from flows.pages.lookup import chain_or_404
from flows.pages.preview_diff import diff_views
from flows.pages.selectors import chain_tool_names
from flows.pipeline import chain_preview

__all__ = ["preview_context"]


def _rows(messages: list[dict[str, Any]], lineage: list[list[int]], tool_names: dict[str, str], model: str):
    unsaved = ChainView(messages=messages, lineage=lineage)  # never saved: only carries data to the renderer
    return view_rows(unsaved, tool_names, model=model)


def preview_context(request: HttpRequest, *, chain_id: int | None, settings: dict[str, Any]) -> dict[str, Any]:
    """Current view vs the view `settings` would give on the chain, with savings, calls and identifier retention."""
    if chain_id is None:
        return {"error": "Choose a chain to preview on."}
    chain = chain_or_404(request, chain_id)
    try:
        result = chain_preview(chain=chain, settings=settings)
    except SettingsError as exc:
        return {"chain": chain, "error": "; ".join(f"{k}: {v}" for k, v in exc.errors.items())}
    model = chain.agent.flow.model_name
    names = chain_tool_names(chain=chain)
    current = chain.latest_view()
    stats = result.get("stats", {})
    cur = result.get("current", {})
    retention = stats.get("identifier_retention")
    preview_rows = _rows(result.get("view", []), result.get("lineage", []), names, model)
    current_rows = _rows(current.messages, current.lineage, names, model) if current else []
    return {
        "chain": chain, "error": result.get("error") or "", "stats": stats, "current": cur,
        "window": result.get("window", {}),
        "retention_pct": None if retention is None else round(100 * retention, 1),
        "delta_bytes": stats.get("bytes_after", 0) - cur.get("bytes", 0),
        "delta_tokens": stats.get("tokens_after", 0) - cur.get("tokens", 0),
        "preview_rows": preview_rows, "current_rows": current_rows, "diff": diff_views(current_rows, preview_rows),
    }
