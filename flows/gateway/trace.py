"""What the call page's trace shows beyond the messages: the request as the agent sent it, where the time went,
and the provider's usage as rows.

`request_params` is stored with the call row (admission): the body without its messages (those are the chain),
with the tools kept whole up to REQUEST_PARAMS_MAX_BYTES (then by name only, and said so), plus the session and
agent headers a client sent. The latency breakdown reads `latency_ms`, `summarize_ms`, `first_byte_ms` and the
`phases` the view and the record add (the wait for the caller's previous record, when admission ended, the
record's write).
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from flows.engine import tools_tokens
from flows.models import GatewayCall

__all__ = ["REQUEST_PARAMS_MAX_BYTES", "TRACE_HEADERS", "request_params", "Phase", "latency_phases",
           "usage_rows", "ToolCost", "tool_costs"]

REQUEST_PARAMS_MAX_BYTES = 64 * 1024
TRACE_HEADERS = ("X-Session-Id", "X-Agent-Type", "X-Chain-Id", "X-Gateway-Mode", "User-Agent")
_HEADER_CHARS = 200
_HISTORY_KEYS = ("messages", "input")  # the history (Chat Completions, Responses) is the chain, not a parameter


def request_params(body: Mapping[str, Any], headers: Mapping[str, str]) -> dict[str, Any]:
    """The body minus `messages`, and the trace headers the client sent; tools by name when too large."""
    params = {k: v for k, v in body.items() if k not in _HISTORY_KEYS}
    if len(json.dumps(params, ensure_ascii=False, default=str)) > REQUEST_PARAMS_MAX_BYTES:
        tools: list[Any] = params["tools"] if isinstance(params.get("tools"), list) else []
        params["tools"] = [{"type": "function", "function": {"name": _tool_name(t)}} for t in tools]
        params["tools_cut"] = f"tool schemas over {REQUEST_PARAMS_MAX_BYTES // 1024} KB: names only"
    sent = {h: str(headers[h])[:_HEADER_CHARS] for h in TRACE_HEADERS if headers.get(h)}
    return {"body": params, "headers": sent}


def _tool_name(tool: Any) -> str:
    if not isinstance(tool, dict):
        return "?"
    fn: dict[str, Any] = tool["function"] if isinstance(tool.get("function"), dict) else tool
    return str(fn.get("name") or "?")[:200]


@dataclass(frozen=True)
class ToolCost:
    name: str
    tokens: int
    description: str


def tool_costs(tools: Any, model: str) -> list[ToolCost]:
    """Each tool's schema in tokens as the request's fit counts it (rendered as the provider renders function
    schemas, `tools_tokens`), each as if sent alone (so with the tools' framing), biggest first."""
    out = []
    for tool in tools if isinstance(tools, list) else []:
        fn: dict[str, Any] = tool["function"] if isinstance(tool, dict) and isinstance(tool.get("function"), dict) \
            else {}
        out.append(ToolCost(_tool_name(tool), tools_tokens([tool], model=model or None),
                            str(fn.get("description") or "")[:300]))
    return sorted(out, key=lambda t: -t.tokens)


@dataclass(frozen=True)
class Phase:
    name: str
    ms: int | None  # None: not measured for this call
    note: str = ""


def latency_phases(call: GatewayCall) -> list[Phase]:
    """Where the call's time went, in order; each phase from the stored figures, None when not measured.

    `phases.admitted_at_ms` is when admission ended (from the request's arrival, like `first_byte_ms` and
    `latency_ms`); the summarizing recorded at admission is part of it, an overflow retry's comes later."""
    phases = call.phases or {}
    admitted, wait = phases.get("admitted_at_ms"), phases.get("wait_ms")
    first = call.first_byte_ms
    if not isinstance(admitted, int) or not isinstance(wait, int):
        admitted = wait = None
    return [
        Phase("waiting for the previous record", wait, "the same caller's last answer being written"),
        Phase("auth, parsing, threading",
              max(0, admitted - wait - call.summarize_ms) if admitted is not None and wait is not None else None,
              "token, body, the chain it continues"),
        Phase("summarizing / compacting", call.summarize_ms, "manage mode, overflow retries"),
        Phase("upstream to first byte", first - admitted if first is not None and admitted is not None else None,
              f"{call.attempts} request{'s' * (call.attempts != 1)}"),
        Phase("upstream total", call.latency_ms - admitted if admitted is not None and call.latency_ms else None,
              "until the answer was complete"),
        Phase("recording", phases.get("record_ms"), "appending the answer, closing the record"),
    ]


def usage_rows(usage: Any, cost_usd: float) -> list[tuple[str, str]]:
    """The provider's usage object as (label, value) rows: prompt, completion, cached, reasoning, total, cost."""
    if not isinstance(usage, dict):
        return []
    prompt_details = usage.get("prompt_tokens_details") or {}
    completion_details = usage.get("completion_tokens_details") or {}
    rows = [("prompt tokens", usage.get("prompt_tokens")), ("completion tokens", usage.get("completion_tokens")),
            ("cached prompt tokens", prompt_details.get("cached_tokens") if isinstance(prompt_details, dict) else None),
            ("reasoning tokens", completion_details.get("reasoning_tokens")
             if isinstance(completion_details, dict) else None),
            ("total tokens", usage.get("total_tokens"))]
    out = [(label, f"{value:,}") for label, value in rows if isinstance(value, int)]
    return out + [("cost", f"${cost_usd:.4f}")]
