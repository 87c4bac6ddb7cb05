"""One gateway call as a trace: the request as the agent sent it, where the time went, usage, then what the model
received beside the raw chain (aligned, with what happened to each message) and the answer.

The context is built section by section (`_request`, `_timing`, `_aligned`, `_answer`), each rendered by its own
partial under templates/flows/gateway_call/, so a field another change records lands in one function and one
partial.
"""
from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from flows.engine import tools_tokens
from flows.gateway.alignment import align, message_text
from flows.gateway.reads import call_raw_messages, call_sent_messages, gateway_call_visible
from flows.gateway.trace import latency_phases, tool_costs, usage_rows
from flows.models import GatewayCall

TEXT_LIMIT_CHARS = 20_000  # one message body on the page; longer ones are cut with a note
FOLD_CHARS = 600  # longer bodies open folded, with this much shown
_PARAMS_SHOWN_APART = ("model", "stream", "tools", "tools_cut")


def _request(call: GatewayCall) -> dict[str, Any]:
    params = (call.request_params or {}).get("body") or {}
    rest = {k: v for k, v in params.items() if k not in _PARAMS_SHOWN_APART}
    tools = tool_costs(params.get("tools"), call.model)
    return {"params": sorted((k, json.dumps(v, ensure_ascii=False, default=str)[:500]) for k, v in rest.items()),
            "tools": tools, "tools_tokens": _tools_total(call, params.get("tools")),
            "tools_cut": params.get("tools_cut", ""),
            "asked_model": params.get("model", ""), "headers": sorted(((call.request_params or {}).get("headers")
                                                                       or {}).items()),
            "recorded": bool(call.request_params)}


def _tools_total(call: GatewayCall, tools: Any) -> int:
    """The tools' tokens in the request, as its fit counted them (the budget the call recorded, which the chain's
    context breakdown shows too); counted from the recorded schemas for calls recorded without a budget."""
    budgeted = (call.budget or {}).get("tools")
    if isinstance(budgeted, int):
        return budgeted
    return tools_tokens(tools if isinstance(tools, list) else [], model=call.model or None)


def _timing(call: GatewayCall) -> dict[str, Any]:
    phases = latency_phases(call)
    total = max(call.latency_ms, 1)
    return {"phases": phases, "phase_bars": [(p, min(100, round(100 * (p.ms or 0) / total))) for p in phases],
            "usage_rows": usage_rows(call.usage, call.cost_usd)}


def _aligned(call: GatewayCall) -> dict[str, Any]:
    raw = [(m.seq, m.to_dict()) for m in call_raw_messages(call)]
    sent = call_sent_messages(call)
    rows = align(raw, sent)
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.status] = counts.get(row.status, 0) + (len(row.raw) if row.status == "summarized" else 1)
    return {"rows": rows, "counts": sorted(counts.items()), "raw_count": len(raw), "sent_count": len(sent),
            "fold_chars": FOLD_CHARS, "text_limit": TEXT_LIMIT_CHARS}


def _answer(call: GatewayCall) -> dict[str, Any]:
    answer = call.response_message
    if not isinstance(answer, dict):
        return {"answer": None}
    calls = []
    for tool_call in answer.get("tool_calls") or []:
        fn = tool_call.get("function") or {} if isinstance(tool_call, dict) else {}
        try:
            args = json.dumps(json.loads(fn.get("arguments") or "{}"), indent=1, ensure_ascii=False)
        except (TypeError, ValueError):
            args = str(fn.get("arguments") or "")
        calls.append({"id": tool_call.get("id", ""), "name": fn.get("name", "?"), "arguments": args})
    text = answer.get("content") if isinstance(answer.get("content"), str) else message_text(
        {"content": answer.get("content")})
    reasoning = answer.get("reasoning")  # {content, signature}: its text, never the dict's repr
    thinking = reasoning.get("content") if isinstance(reasoning, dict) else reasoning
    thinking = thinking if isinstance(thinking, str) else ""
    return {"answer": {"text": text or "", "tool_calls": calls, "reasoning": thinking}}


@login_required
def gateway_call_page(request: HttpRequest, chain_id: int, call_id: int) -> HttpResponse:
    call = gateway_call_visible(user=request.user, chain_id=chain_id, call_id=call_id)
    return render(request, "flows/gateway_call.html", {
        "call": call, "chain": call.chain, "flow": call.chain.agent.flow,
        **_request(call), **_timing(call), **_aligned(call), **_answer(call),
    })
