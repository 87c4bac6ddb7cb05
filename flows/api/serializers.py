"""Model rows -> JSON-ready dicts for the API (reads only; no queries beyond what a row needs)."""
from __future__ import annotations

from typing import Any

from flows.api.selectors import chain_messages
from flows.config import settings_values, settings_warnings
from flows.core import SETTINGS_FIELDS
from flows.engine import content_text, message_size, parse_chain
from flows.gateway import chain_agent_loops
from flows.models import Agent, AgentLoop, Chain, Flow, Message, SummarizerSettings, SummaryEvent

__all__ = ["flow_json", "agent_json", "message_json", "chain_json", "chain_page_json", "chain_view_json", "event_json",
           "settings_json", "sections_json", "agent_loop_json"]

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
           "model_name": flow.model_name, "session_id": flow.session_id, "created_at": _ts(flow.created_at),
           "updated_at": _ts(flow.updated_at)}
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


def chain_view_json(chain: Chain, stats: dict[str, Any], *, offset: int = 0,
                    limit: int | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """({view, sections, view paging}, the view's stats): one page of the newest view (else of the raw chain
    itself), `limit` messages from `offset`; `sections` (the whole view's structure) only with the page at 0.
    A never-summarized import is its own view: whole, its first page was megabytes."""
    view_row = chain.latest_view()
    view = view_row.messages if view_row else chain.raw_messages()
    end = len(view) if limit is None else offset + limit
    part: dict[str, Any] = {"view": view[offset:end], "view_offset": offset, "view_has_more": end < len(view),
                            "next_view_offset": end if end < len(view) else None}
    parse_error = None
    if offset == 0:
        part["sections"], parse_error = sections_json(view)
    view_stats = {"view_messages": len(view), "view_bytes": view_row.byte_size if view_row else stats["raw_bytes"],
                  "view_tokens": view_row.token_count if view_row else stats["raw_tokens"],
                  "view_raw_seq_to": view_row.raw_seq_to if view_row else chain.last_seq,
                  "parse_error": parse_error}
    return part, view_stats


def chain_page_json(chain: Chain, *, after_seq: int = 0, limit: int) -> dict[str, Any]:
    """The chain with one page of raw messages (seq > after_seq, at most `limit`) and `next_after_seq` to
    continue from (None on the last page); no view (chain_view_json adds it to the first page)."""
    rows = list(chain_messages(chain=chain, after_seq=after_seq, limit=limit + 1))
    has_more = len(rows) > limit
    rows = rows[:limit]
    totals = chain.totals()
    stats: dict[str, Any] = {"raw_messages": totals["messages"], "raw_bytes": totals["bytes"],
                             "raw_tokens": totals["tokens"], "compactions": chain.compactions,
                             "skipped_runs": chain.skipped_runs,
                             "last_seq": chain.last_seq, "view_version": chain.view_version}
    loops, newest_loops = chain_agent_loops(chain_id=chain.pk)
    return {"id": chain.pk, "agent_id": chain.agent_id, "flow_id": chain.agent.flow_id, "is_active": chain.is_active,
            "tool_call_id_template": chain.tool_call_id_template, "raw": [message_json(r) for r in rows],
            "has_more": has_more, "next_after_seq": rows[-1].seq if has_more else None, "stats": stats,
            "loops": loops, "agent_loops": [agent_loop_json(loop) for loop in newest_loops]}


def agent_loop_json(loop: AgentLoop) -> dict[str, Any]:
    fields = ("tool_name", "arguments", "repeats", "in_a_row", "window", "first_seq", "last_seq", "call_id")
    return {"id": loop.pk, **{f: getattr(loop, f) for f in fields}, "created_at": _ts(loop.created_at),
            "updated_at": _ts(loop.updated_at)}


def chain_json(chain: Chain, *, after_seq: int = 0, limit: int, with_view: bool = True) -> dict[str, Any]:
    """A page of the chain, with the view and its sections when `with_view` (the first page)."""
    out = chain_page_json(chain, after_seq=after_seq, limit=limit)
    if with_view:
        view_part, view_stats = chain_view_json(chain, out["stats"])
        out.update(view_part)
        out["stats"].update(view_stats)
    return out


def event_json(event: SummaryEvent) -> dict[str, Any]:
    fields = ("trigger", "outcome", "reason", "instructions", "bytes_before", "bytes_after", "tokens_before",
              "tokens_after", "calls", "model", "duration_ms", "covered", "raw_seq_to")
    return {"id": event.pk, "chain_id": event.chain_id, **{f: getattr(event, f) for f in fields},
            **_model_calls(event),
            "view_id": event.view_id, "created_at": _ts(event.created_at), "finished_at": _ts(event.finished_at)}


def _model_calls(event: SummaryEvent) -> dict[str, Any]:
    """`calls` counts summarize calls (the extractive summarizer's too); `model_calls` those that went to a model,
    `summarizer_model` its name: the figures the events table and the event page show."""
    annotated = getattr(event, "llm_rows", None)
    if annotated is None:  # an event fresh from a write (compact now): no annotation, read the rows
        return {"model_calls": event.llm_calls.count(),
                "summarizer_model": event.llm_calls.order_by("-model").values_list("model", flat=True).first()}
    return {"model_calls": annotated, "summarizer_model": getattr(event, "summarizer_model", None)}


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
