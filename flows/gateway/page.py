"""One gateway call: what was sent to the model, beside the raw chain as it stood, and what came back."""
from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from flows.gateway.reads import call_raw_messages, call_sent_messages, gateway_call_visible

TEXT_LIMIT_CHARS = 20_000  # one message body on the page; longer ones are cut with a note


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    parts = [content] if isinstance(content, str) else [
        str(p.get("text") or (p.get("image_url") or {}).get("url") or "") for p in content or []
        if isinstance(p, dict)]
    for call in message.get("tool_calls") or []:
        fn = call.get("function") or {}
        parts.append(f"→ {fn.get('name', '?')}({fn.get('arguments', '')})")
    text = "\n".join(p for p in parts if p)
    return text if len(text) <= TEXT_LIMIT_CHARS else text[:TEXT_LIMIT_CHARS] + "\n… (cut for the page)"


def _rows(messages: list[dict[str, Any]]) -> list[dict[str, str]]:
    return [{"role": m.get("role", "?"), "text": _text(m)} for m in messages]


@login_required
def gateway_call_page(request: HttpRequest, chain_id: int, call_id: int) -> HttpResponse:
    call = gateway_call_visible(user=request.user, chain_id=chain_id, call_id=call_id)
    raw = call_raw_messages(call)
    return render(request, "flows/gateway_call.html", {
        "call": call, "chain": call.chain, "flow": call.chain.agent.flow,
        "sent": _rows(call_sent_messages(call)),
        "raw": [{"seq": m.seq, **_rows([m.to_dict()])[0]} for m in raw],
        "answer": _rows([call.response_message])[0] if call.response_message else None,
        "usage": json.dumps(call.usage) if call.usage else "",
    })
