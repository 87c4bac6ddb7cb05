"""The chain's context breakdown (issue 24 item 3, Letta's context viewer): the model's window as one bar.

The next request takes the system message, the summaries, the recent messages (the view's verbatim messages
plus raw messages newer than the view), the tool schemas the agent sent on its last gateway call, and the
output the window keeps free for the answer; what is left is free. One function computes every figure, so the
chain page's window bar, its breakdown table and `GET /api/chains/{id}` (`context`) say the same thing.

The view's tokens are the stored `ChainView.token_count` (the figure the stat card shows): system and summary
messages are counted per message, "recent" is the rest of that total, so the parts add up to it exactly.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Sum

from flows.engine import message_tokens
from flows.models import Chain, ChainView, GatewayCall, Message
from flows.pages.selectors import WindowInfo, is_summary_message, settings_row_for, window_for_model
from flows.pipeline import serving_route

__all__ = ["BAR_UNITS", "ContextPart", "bar_rects", "chain_window", "context_breakdown", "chain_context_json"]

BAR_UNITS = 1000  # the SVG bar's viewBox width: a part's width is its share of the window in these units


@dataclass(frozen=True)
class ContextPart:
    key: str  # the CSS class suffix and the API's key
    label: str
    tokens: int
    note: str


def chain_window(chain: Chain) -> tuple[WindowInfo, int]:
    """The window of the model serving the chain (its newest gateway call's provider and model, else the
    flow's) and the output it reserves, as the engine computes them (`effective_reserve`)."""
    flow = chain.agent.flow
    provider, model = serving_route(chain.pk)
    window = window_for_model(model or flow.model_name, provider)
    row = settings_row_for(profile=chain.agent.profile, flow=flow)
    return window, window.reserve(row.reserve_tokens if row is not None else None)


def _view_parts(view: ChainView, model: str) -> tuple[int, int, int, int]:
    """(system tokens, summary tokens, summary messages, verbatim messages) of a saved view."""
    system = summaries = summary_count = verbatim = 0
    lineage = view.lineage or []
    for index, message in enumerate(view.messages):
        seqs = [int(s) for s in (lineage[index] if index < len(lineage) else [])]
        if message.get("role") == "system":
            system += message_tokens(message, model=model or None)
        elif is_summary_message(message, seqs):
            summaries += message_tokens(message, model=model or None)
            summary_count += 1
        else:
            verbatim += 1
    return system, summaries, summary_count, verbatim


def _raw_after(chain: Chain, seq: int) -> tuple[int, int]:
    """(messages, tokens) of the raw messages newer than `seq`: sent after the view until it folds them."""
    agg = Message.objects.filter(chain=chain, seq__gt=seq).aggregate(n=Count("id"), t=Sum("token_count"))
    return agg["n"] or 0, agg["t"] or 0


def _raw_system_tokens(chain: Chain) -> int:
    return Message.objects.filter(chain=chain, role="system").aggregate(t=Sum("token_count"))["t"] or 0


def _last_call_tools(chain: Chain) -> tuple[int, dict[str, Any] | None]:
    """Tool (and response) schema tokens of the chain's newest gateway call that recorded its budget."""
    call = (GatewayCall.objects.filter(chain=chain, budget__isnull=False).order_by("-id")
            .only("id", "created_at", "budget").first())
    if call is None or not isinstance(call.budget, dict):
        return 0, None
    tools, schema = int(call.budget.get("tools") or 0), int(call.budget.get("schema") or 0)
    return tools + schema, {"id": call.pk, "created_at": call.created_at.isoformat(), "tools": tools,
                            "schema": schema}


def _message_parts(chain: Chain, view: ChainView | None, model: str) -> tuple[list[ContextPart], int, int]:
    """System, summaries and recent messages; with the view's tokens and the newer raw messages' tokens."""
    if view is None:
        totals = chain.totals()
        system = min(_raw_system_tokens(chain), totals["tokens"])
        return [ContextPart("system", "System", system, "system message"),
                ContextPart("summaries", "Summaries", 0, "no summary yet"),
                ContextPart("recent", "Recent messages", totals["tokens"] - system,
                            f"{totals['messages']:,} raw messages, verbatim (no view yet)")], totals["tokens"], 0
    system, summaries, summary_count, verbatim = _view_parts(view, model)
    system, summaries = min(system, view.token_count), min(summaries, max(view.token_count - system, 0))
    newer, newer_tokens = _raw_after(chain, view.raw_seq_to)
    recent = view.token_count - system - summaries + newer_tokens
    newer_note = f" + {newer:,} newer raw message{'s' if newer != 1 else ''}" if newer else ""
    return [ContextPart("system", "System", system, "system message"),
            ContextPart("summaries", "Summaries", summaries,
                        f"{summary_count:,} summary message{'s' if summary_count != 1 else ''}"),
            ContextPart("recent", "Recent messages", recent,
                        f"{verbatim:,} verbatim view message{'s' if verbatim != 1 else ''}{newer_note}")], \
        view.token_count, newer_tokens


def bar_rects(parts: list[ContextPart], window: int) -> list[dict[str, Any]]:
    """SVG rectangles: each part's share of the window, clamped so an over-full window still fits the bar."""
    out, x = [], 0
    for part in parts:
        width = min(round(BAR_UNITS * part.tokens / window), BAR_UNITS - x) if part.tokens > 0 else 0
        out.append({"key": part.key, "x": x, "width": max(width, 0)})
        x += max(width, 0)
    return out


def context_breakdown(*, chain: Chain, view: ChainView | None, window: WindowInfo, reserve: int) -> dict[str, Any]:
    """Every figure of the window bar and its breakdown; JSON-ready (the API returns it as is, minus `bar`)."""
    model = chain.agent.flow.model_name
    parts, view_tokens, newer_tokens = _message_parts(chain, view, model)
    tools, call = _last_call_tools(chain)
    parts.append(ContextPart("tools", "Tool schemas", tools,
                             f"sent with gateway call #{call['id']}" if call else "no gateway call recorded"))
    used = sum(p.tokens for p in parts)
    out: dict[str, Any] = {"known": bool(window.window), "window": window.window, "window_source": window.source,
                           "model": window.model, "view_tokens": view_tokens, "newer_raw_tokens": newer_tokens,
                           "tool_tokens": tools, "last_call": call, "used": used, "reserve": reserve if window.window
                           else None, "free": None, "over": False}
    if not window.window:
        out["parts"] = [_part_json(p, None) for p in parts]
        return out
    parts.append(ContextPart("reserve", "Reserved output", reserve, "kept free for the answer"))
    free = window.window - used - reserve
    out.update(free=max(free, 0), over=free < 0, bar=bar_rects(parts, window.window))
    parts.append(ContextPart("free", "Free", max(free, 0), "over the window: compacts before the next call"
                             if free < 0 else "room left in the window"))
    out["parts"] = [_part_json(p, window.window) for p in parts]
    return out


def _part_json(part: ContextPart, window: int | None) -> dict[str, Any]:
    share = round(100 * part.tokens / window, 1) if window else None
    return {"key": part.key, "label": part.label, "tokens": part.tokens, "percent": share, "note": part.note}


def chain_context_json(chain: Chain) -> dict[str, Any]:
    """`context` of `GET /api/chains/{id}`: the chain page's breakdown, without the bar's drawing."""
    window, reserve = chain_window(chain)
    out = context_breakdown(chain=chain, view=chain.latest_view(), window=window, reserve=reserve)
    out.pop("bar", None)
    return out
