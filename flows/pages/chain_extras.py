"""The chain page's satellites: download the chain, one event's summarizer calls, and the view's history as diffs.

All read-only GETs, access-checked through `lookup.chain_or_404` (another user's chain is a 404).
"""
from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from flows.engine import FORMATS, export_chain
from flows.models import ChainView
from flows.pages.lookup import chain_or_404
from flows.pages.selectors import chain_event_detail, chain_view_version, chain_view_versions, display_text

__all__ = ["chain_download", "chain_event_page", "chain_views_page", "ViewChange", "view_diff"]


@login_required
@require_GET
def chain_download(request: HttpRequest, chain_id: int, fmt: str) -> HttpResponse:
    """The raw chain as a file: `openai` / `pentagi` JSON, `openclaw` JSONL (what `import_chain` reads back)."""
    if fmt not in FORMATS:
        return HttpResponse(f"unknown format; one of {', '.join(FORMATS)}", status=400,
                            content_type="text/plain; charset=utf-8")
    chain = chain_or_404(request, chain_id)
    data = export_chain(chain.raw_messages(), fmt)
    if isinstance(data, str):
        response = HttpResponse(data, content_type="application/x-ndjson; charset=utf-8")
        ext = "jsonl"
    else:
        response = HttpResponse(json.dumps(data, ensure_ascii=False, indent=1), content_type="application/json")
        ext = "json"
    response["Content-Disposition"] = f'attachment; filename="chain-{chain.pk}-{fmt}.{ext}"'
    return response


@login_required
@require_GET
def chain_event_page(request: HttpRequest, chain_id: int, event_id: int) -> HttpResponse:
    """What the summarizer did in one event: settings, covered raw seqs, its output and every model call."""
    chain = chain_or_404(request, chain_id)
    found = chain_event_detail(chain=chain, event_id=event_id)
    if found is None:
        raise Http404("no such event on this chain")
    event, calls = found
    return render(request, "flows/chain_event.html", {
        "chain": chain, "flow": chain.agent.flow, "agent": chain.agent, "event": event, "calls": calls,
        "cost": sum(c.cost_usd for c in calls), "nav": "flows", "here": f"event #{event.pk}",
        "settings_json": json.dumps(event.settings_snapshot, indent=1, sort_keys=True, ensure_ascii=False),
    })


@dataclass
class ViewChange:
    kind: str  # "same", "added", "removed"
    role: str
    text: str
    lineage: list[int]
    index: int  # position in its own version


def _key(message: dict[str, Any]) -> tuple[str, str]:
    return message.get("role", ""), display_text(message)


def view_diff(old: ChainView | None, new: ChainView) -> list[ViewChange]:
    """Message-level diff of two view versions (a changed message shows as removed + added)."""
    before = old.messages if old is not None else []
    after = new.messages
    lineage_old = (old.lineage or []) if old is not None else []
    lineage_new = new.lineage or []

    def change(kind: str, messages: list[dict[str, Any]], lineage: list[Any], i: int) -> ViewChange:
        role, text = _key(messages[i])
        return ViewChange(kind, role, text, [int(s) for s in (lineage[i] if i < len(lineage) else [])], i)

    out: list[ViewChange] = []
    matcher = difflib.SequenceMatcher(a=[_key(m) for m in before], b=[_key(m) for m in after], autojunk=False)
    for op, a1, a2, b1, b2 in matcher.get_opcodes():
        if op == "equal":
            out += [change("same", after, lineage_new, j) for j in range(b1, b2)]
            continue
        out += [change("removed", before, lineage_old, i) for i in range(a1, a2)]
        out += [change("added", after, lineage_new, j) for j in range(b1, b2)]
    return out


def _version_param(request: HttpRequest, name: str) -> int | None:
    try:
        return int(request.GET[name])
    except (KeyError, ValueError):
        return None


@login_required
@require_GET
def chain_views_page(request: HttpRequest, chain_id: int) -> HttpResponse:
    """Step through the view's versions; each shown as a diff against the version before it (or `?base=`)."""
    chain = chain_or_404(request, chain_id)
    versions = chain_view_versions(chain=chain)
    numbers = [v["version"] for v in versions]
    wanted = _version_param(request, "v")
    current = wanted if wanted in numbers else (numbers[0] if numbers else None)
    if wanted is not None and wanted not in numbers:
        raise Http404("no such view version")
    new = chain_view_version(chain=chain, version=current) if current is not None else None
    older = [n for n in numbers if current is not None and n < current]
    base_no = _version_param(request, "base")
    base_no = base_no if base_no in numbers and base_no != current else (older[0] if older else None)
    old = chain_view_version(chain=chain, version=base_no) if base_no is not None else None
    changes = view_diff(old, new) if new is not None else []
    newer = [n for n in numbers if current is not None and n > current]
    return render(request, "flows/chain_views.html", {
        "chain": chain, "flow": chain.agent.flow, "agent": chain.agent, "versions": versions, "new": new,
        "old": old, "changes": changes, "nav": "flows", "here": "view history", "current": current, "base": base_no,
        "prev_version": older[0] if older else None, "next_version": newer[-1] if newer else None,
        "added": sum(c.kind == "added" for c in changes), "removed": sum(c.kind == "removed" for c in changes),
        "kept": sum(c.kind == "same" for c in changes),
        "bytes_delta": (new.byte_size - old.byte_size) if new is not None and old is not None else None,
        "tokens_delta": (new.token_count - old.token_count) if new is not None and old is not None else None,
    })
