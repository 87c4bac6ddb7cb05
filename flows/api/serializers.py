"""Model rows -> JSON-ready dicts for the API (reads only; no queries beyond what a row needs)."""
from __future__ import annotations

from typing import Any

from flows.engine import content_text, message_size, parse_chain
from flows.models import Agent, Chain, Flow, Message, SummarizerSettings, SummaryEvent
from flows.selectors import chain_raw_messages, chain_view_latest
from flows.settings_registry import SETTINGS_FIELDS, settings_values, settings_warnings

__all__ = ["flow_json", "agent_json", "message_json", "chain_json", "event_json", "settings_json", "sections_json"]

HUMAN_PREVIEW_CHARS = 160


def _ts(value) -> str | None:
    return value.isoformat() if value else None


def agent_json(agent: Agent) -> dict[str, Any]:
    chain = next((c for c in agent.chains.all() if c.is_active), None)
    return {"id": agent.pk, "flow_id": agent.flow_id, "agent_type": agent.agent_type, "profile": agent.profile,
            "chain_id": chain.pk if chain else None, "chain_ids": [c.pk for c in agent.chains.all()],
            "created_at": _ts(agent.created_at)}


def flow_json(flow: Flow, *, agents: bool = False) -> dict[str, Any]:
    out = {"id": flow.pk, "title": flow.title, "status": flow.status, "owner": flow.owner.get_username(),
           "model_name": flow.model_name, "created_at": _ts(flow.created_at), "updated_at": _ts(flow.updated_at)}
    if agents:
        out["agents"] = [agent_json(a) for a in flow.agents.prefetch_related("chains")]
    return out


def message_json(row: Message) -> dict[str, Any]:
    return {**row.to_dict(), "seq": row.seq, "byte_size": row.byte_size, "token_count": row.token_count}


def sections_json(messages: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str | None]:
    """The view's structure as the summarizer parses it (force mode, as the summarizer itself does)."""
    try:
        ast = parse_chain(messages, force=True)
    except Exception as exc:  # noqa: BLE001 - a chain the engine cannot parse still shows; say why
        return [], str(exc)
    out = []
    for index, sec in enumerate(ast.sections):
        human = sec.header.human
        out.append({
            "index": index, "size": sec.size,
            "header": {"system_bytes": message_size(sec.header.system) if sec.header.system else 0,
                       "human_bytes": message_size(human) if human else 0,
                       "human_preview": content_text(human)[:HUMAN_PREVIEW_CHARS] if human else ""},
            "pairs": [{"kind": p.kind, "size": p.size, "summary": p.is_summary, "messages": len(p.messages())}
                      for p in sec.body],
        })
    return out, None


def chain_json(chain: Chain) -> dict[str, Any]:
    rows = list(chain.messages.order_by("seq"))
    raw = [message_json(r) for r in rows]
    view_row = chain_view_latest(chain=chain)
    view = view_row.messages if view_row else chain_raw_messages(chain=chain)
    sections, parse_error = sections_json(view)
    raw_bytes = sum(r.byte_size for r in rows)
    raw_tokens = sum(r.token_count or 0 for r in rows)
    stats = {
        "raw_messages": len(rows), "raw_bytes": raw_bytes, "raw_tokens": raw_tokens,
        "view_messages": len(view), "view_bytes": view_row.byte_size if view_row else raw_bytes,
        "view_tokens": view_row.token_count if view_row else raw_tokens,
        "view_raw_seq_to": view_row.raw_seq_to if view_row else chain.last_seq,
        "compactions": chain.compactions, "last_seq": chain.last_seq, "view_version": chain.view_version,
        "parse_error": parse_error,
    }
    return {"id": chain.pk, "agent_id": chain.agent_id, "flow_id": chain.agent.flow_id, "is_active": chain.is_active,
            "tool_call_id_template": chain.tool_call_id_template, "raw": raw, "view": view,
            "sections": sections, "stats": stats}


def event_json(event: SummaryEvent) -> dict[str, Any]:
    fields = ("trigger", "outcome", "reason", "instructions", "bytes_before", "bytes_after", "tokens_before",
              "tokens_after", "calls", "model", "duration_ms", "covered", "raw_seq_to")
    return {"id": event.pk, "chain_id": event.chain_id, **{f: getattr(event, f) for f in fields},
            "view_id": event.view_id, "created_at": _ts(event.created_at), "finished_at": _ts(event.finished_at)}


def settings_json(row: SummarizerSettings) -> dict[str, Any]:
    values = settings_values(row)
    return {
        "id": row.pk, "profile": row.profile, "flow_id": row.flow_id, "values": values,
        "fields": [{"name": f.name, "env": f.env[row.profile], "default": f.default[row.profile], "unit": f.unit,
                    "kind": f.kind, "group": f.group, "choices": list(f.choices), "help": f.help,
                    "editable": f.editable(row.profile), "min": f.bounds[0], "max": f.bounds[1]}
                   for f in SETTINGS_FIELDS],
        "warnings": settings_warnings(values), "updated_at": _ts(row.updated_at),
    }
