"""Reads for the server-rendered pages: the flows list, the flow page and the chain page with its satellites.

Everything here only reads; who may see what is `Flow.objects.visible_to` / `Chain.objects.visible_to`, and a
page that finds nothing answers 404 itself (`flows.pages.lookup`). Pages must stay fast on 5,000-message
chains, so the chain page loads one seq window of raw messages (never the whole chain), aggregates sizes in the
database, and reads the view history with `.values()` (no message bodies).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, Max, OuterRef, Q, QuerySet, Subquery, Sum, TextField
from django.db.models.functions import Cast
from django.utils import timezone

from flows.config import model_window_for
from flows.engine import effective_reserve, window_check
from flows.models import (
    AgentLoop,
    Chain,
    ChainView,
    Flow,
    LLMCall,
    MemoryNote,
    Message,
    ProviderConfig,
    SummarizerSettings,
    SummaryEvent,
)
from flows.pages.chain_costs import ChainCost, ChainCostRow, chain_cost, chain_costs, flow_chain_costs
from flows.pages.event_filters import ALL_BUT_SKIPPED, EventFilter
from flows.pages.flow_activity import Activity, flow_activity

__all__ = [
    "PAGE_SIZE_MESSAGES", "SUMMARY_TOOL_NAME", "SUMMARY_PREFIX", "EVENTS_SHOWN", "NOTES_SHOWN", "TIMELINE_SHOWN",
    "WindowInfo", "FlowRow", "RawFilters", "FlowCost", "ChainCost", "ChainCostRow", "NoteFilter", "chain_cost",
    "chain_costs", "flow_chain_costs",
    "window_for_model", "flows_list_rows", "flow_detail_context", "chain_tool_names", "raw_page", "raw_page_count",
    "view_history", "raw_prefix_bytes", "display_text", "is_summary_message", "settings_row_for",
    "chain_events_page", "events_hidden", "chain_event_detail", "chain_view_versions", "chain_view_version",
    "chain_message",
    "flow_costs", "flow_notes", "flow_timeline", "flow_live_chain_ids", "flow_cost", "flow_extras",
]

PAGE_SIZE_MESSAGES = 200
SUMMARY_TOOL_NAME = "execute_task_and_return_summary"
SUMMARY_PREFIX = "**summarized content:**\n"
COMPACTION_SUMMARY_MARK = "<summary>"
EVENTS_SHOWN = 100  # one limit for the chain page's event list, wherever it is read
NOTES_SHOWN = 500
TIMELINE_SHOWN = 100


@dataclass(frozen=True)
class WindowInfo:
    """The model's context window as far as we know it; `window` is None when unknown."""

    model: str
    window: int | None
    max_output: int | None
    source: str  # "override (admin)", "discovered from <provider>", "catalog", ... (model_window_for); "" unknown

    def reserve(self, configured: int | None = None) -> int:
        """Tokens kept free for the answer, as the engine computes them (`effective_reserve`): a configured
        reserve (halved when it would fill the window), else the model's max output capped at 20% of W."""
        if not self.window:
            return configured or 0
        return effective_reserve(self.window, configured, self.model or None, max_output_tokens=self.max_output)

    @property
    def check(self) -> dict[str, str] | None:
        """The agent-work window check ("refuse" under 16k, "warn" under 32k, "ok"); None when unknown."""
        if not self.window:
            return None
        level, message = window_check(self.window)
        return {"level": level, "message": message}


def window_for_model(model_name: str, provider: ProviderConfig | None = None) -> WindowInfo:
    """The window as the pipeline sees it: admin/env override, discovered from `provider` (else the default),
    then the catalog; else unknown. A page asks no endpoint: it shows what is known."""
    window, max_output, source = (model_window_for(model=model_name, provider=provider, discover=False)
                                  if model_name else (None, None, "unknown"))
    return WindowInfo(model_name, window, max_output, source if window else "")


@dataclass
class FlowRow:
    flow: Flow
    agents: int = 0
    chains: int = 0
    messages: int = 0
    raw_bytes: int = 0
    view_bytes: int = 0
    view_tokens: int = 0
    compactions: int = 0
    last_activity: Any = None
    window: WindowInfo | None = None
    activity: Activity | None = None

    @property
    def saved_percent(self) -> int:
        if not self.raw_bytes or not self.view_bytes:
            return 0
        return max(0, round(100 * (self.raw_bytes - self.view_bytes) / self.raw_bytes))

    @property
    def window_percent(self) -> int | None:
        if not self.window or not self.window.window:
            return None
        return min(100, round(100 * self.view_tokens / self.window.window))


def _latest_view_subquery(column: str) -> Subquery:
    latest = ChainView.objects.filter(chain=OuterRef("pk"), version=OuterRef("view_version"))
    return Subquery(latest.values(column)[:1])


def flows_list_rows(*, user) -> list[FlowRow]:
    """One row per visible flow, with sizes summed over its active chains (four queries in all)."""
    newest = SummaryEvent.objects.filter(chain__agent__flow=OuterRef("pk")).order_by("-id")
    flows = list(Flow.objects.visible_to(user).select_related("owner").annotate(
        n_agents=Count("agents"), last_event_outcome=Subquery(newest.values("outcome")[:1]),
        last_event_at=Subquery(newest.values("created_at")[:1])))
    rows = {f.pk: FlowRow(flow=f, agents=f.n_agents, last_activity=f.updated_at) for f in flows}
    chains = (Chain.objects.filter(agent__flow_id__in=rows.keys(), is_active=True)
              .annotate(v_bytes=_latest_view_subquery("byte_size"), v_tokens=_latest_view_subquery("token_count"))
              .values("id", "agent__flow_id", "compactions", "updated_at", "v_bytes", "v_tokens"))
    for c in chains:
        row = rows[c["agent__flow_id"]]
        row.chains += 1
        row.compactions += c["compactions"]
        row.view_bytes += c["v_bytes"] or 0
        row.view_tokens += c["v_tokens"] or 0
        row.last_activity = max(row.last_activity, c["updated_at"])
    sizes = (Message.objects.filter(chain__agent__flow_id__in=rows.keys(), chain__is_active=True)
             .values("chain__agent__flow_id").annotate(n=Count("id"), b=Sum("byte_size")))
    for s in sizes:
        row = rows[s["chain__agent__flow_id"]]
        row.messages, row.raw_bytes = s["n"], s["b"] or 0
    windows: dict[str, WindowInfo] = {}
    for row in rows.values():
        name = row.flow.model_name
        row.window = windows.setdefault(name, window_for_model(name))
    _set_activity(rows)
    return sorted(rows.values(), key=lambda r: (r.last_activity, r.flow.pk), reverse=True)


def _set_activity(rows: dict[int, FlowRow]) -> None:
    """Each row's activity (flow_activity) from its newest event's outcome and its last write."""
    now = timezone.now()
    for row in rows.values():
        if row.flow.last_event_at is not None:
            row.last_activity = max(row.last_activity, row.flow.last_event_at)
        row.activity = flow_activity(status=row.flow.status, last_activity=row.last_activity,
                                     newest_event_outcome=row.flow.last_event_outcome, now=now)


def flow_detail_context(*, flow: Flow) -> dict[str, Any]:
    """Agents with their chains (sizes aggregated, the agent loops seen in each), the most recently active
    agent first, and the flow's model window."""
    return {"agents": flow_agents(flow=flow), "window": window_for_model(flow.model_name)}


def flow_agents(*, flow: Flow) -> list[dict[str, Any]]:
    """The flow's agents, most recently active first: an agent's activity is its newest message, not the chain's
    last write (a summarization landing a second after the turn would move an idle agent back to the top)."""
    chains = list(Chain.objects.filter(agent__flow=flow).select_related("agent")
                  .annotate(n_messages=Count("messages"), raw_bytes=Sum("messages__byte_size"),
                            last_message_at=Max("messages__created_at"),
                            v_bytes=_latest_view_subquery("byte_size"), v_tokens=_latest_view_subquery("token_count"))
                  .order_by("agent_id", "id"))
    loops: dict[int, list[AgentLoop]] = {}
    for loop in AgentLoop.objects.filter(chain__agent__flow=flow).order_by("-updated_at", "-pk"):
        loops.setdefault(loop.chain_id, []).append(loop)
    agents: dict[int, dict[str, Any]] = {}
    for agent in flow.agents.all():
        agents[agent.pk] = {"agent": agent, "chains": [], "last_activity": agent.created_at, "loops": 0}
    for chain in chains:
        entry = agents[chain.agent_id]
        chain.loop_rows = loops.get(chain.pk, [])
        entry["chains"].append(chain)
        entry["loops"] += len(chain.loop_rows)
        entry["last_activity"] = max(entry["last_activity"], chain.last_message_at or chain.created_at)
    return sorted(agents.values(), key=lambda a: (a["last_activity"], a["agent"].pk), reverse=True)


@dataclass(frozen=True)
class RawFilters:
    role: str = ""
    tool: str = ""
    q: str = ""

    @property
    def active(self) -> bool:
        return bool(self.role or self.tool or self.q)


def chain_tool_names(*, chain: Chain) -> dict[str, str]:
    """tool_call_id -> function name, from the assistant messages' tool calls (tool rows often lack `name`)."""
    names: dict[str, str] = {}
    rows = (Message.objects.filter(chain=chain, role="assistant", tool_calls__isnull=False)
            .values_list("tool_calls", flat=True))
    for calls in rows:
        for call in calls or []:
            if isinstance(call, dict) and call.get("id"):
                names[call["id"]] = ((call.get("function") or {}).get("name") or "")
    return names


def _filtered(chain: Chain, filters: RawFilters, tool_names: dict[str, str]):
    qs = Message.objects.filter(chain=chain)
    if filters.role:
        qs = qs.filter(role=filters.role)
    if filters.tool:
        ids = [cid for cid, name in tool_names.items() if name == filters.tool]
        qs = qs.filter(Q(tool_call_id__in=ids) | Q(name=filters.tool, role="tool")
                       | Q(role="assistant", tool_calls__icontains=f'"{filters.tool}"'))
    if filters.q:
        qs = qs.annotate(_text=Cast("content", TextField()), _calls=Cast("tool_calls", TextField()))
        qs = qs.filter(Q(_text__icontains=filters.q) | Q(_calls__icontains=filters.q))
    return qs


def raw_page_count(*, chain: Chain, filters: RawFilters, tool_names: dict[str, str]) -> int:
    """Pages of at most PAGE_SIZE_MESSAGES; unfiltered pages are seq windows, so they never shift."""
    total = chain.last_seq if not filters.active else _filtered(chain, filters, tool_names).count()
    return max(1, -(-total // PAGE_SIZE_MESSAGES))


def raw_page(*, chain: Chain, filters: RawFilters, tool_names: dict[str, str], page: int) -> list[Message]:
    """The raw messages of one page, oldest first."""
    if not filters.active:
        lo = (page - 1) * PAGE_SIZE_MESSAGES + 1
        return list(Message.objects.filter(chain=chain, seq__gte=lo, seq__lt=lo + PAGE_SIZE_MESSAGES).order_by("seq"))
    qs = _filtered(chain, filters, tool_names).order_by("seq")
    start = (page - 1) * PAGE_SIZE_MESSAGES
    return list(qs[start:start + PAGE_SIZE_MESSAGES])


def view_history(*, chain: Chain) -> dict[str, list[dict[str, Any]]]:
    """Sizes of every view version and every finished event, without loading message bodies."""
    views = list(ChainView.objects.filter(chain=chain).order_by("version")
                 .values("version", "raw_seq_to", "byte_size", "token_count"))
    events = list(SummaryEvent.objects.filter(chain=chain, outcome="ok").order_by("id")
                  .values("id", "raw_seq_to", "bytes_before", "bytes_after", "tokens_before", "tokens_after",
                          "trigger", "retention", "view__version"))
    return {"views": views, "events": events}


def raw_prefix_bytes(*, chain: Chain) -> list[int]:
    """prefix[k] = raw bytes of seqs 1..k (prefix[0] = 0), from one narrow query."""
    sizes = Message.objects.filter(chain=chain).order_by("seq").values_list("byte_size", flat=True)
    prefix = [0]
    for size in sizes:
        prefix.append(prefix[-1] + size)
    return prefix


def display_text(message: dict[str, Any]) -> str:
    """Plain text of a message for display: its content parts, then its tool calls as `name(arguments)`."""
    content = message.get("content")
    parts: list[str] = []
    if isinstance(content, str):
        parts.append(content)
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, dict):
                parts.append(str(part.get("text") or (part.get("image_url") or {}).get("url") or ""))
    for call in message.get("tool_calls") or []:
        fn = (call or {}).get("function") or {}
        parts.append(f"→ {fn.get('name', '?')}({fn.get('arguments', '')})")
    return "\n".join(p for p in parts if p)


def is_summary_message(message: dict[str, Any], raw_seqs: list[int]) -> bool:
    """A summary pair, a prefixed completion, a compaction summary, or anything standing for several raws."""
    if len(raw_seqs) != 1:
        return True
    if message.get("name") == SUMMARY_TOOL_NAME:
        return True
    if any(((c or {}).get("function") or {}).get("name") == SUMMARY_TOOL_NAME for c in message.get("tool_calls") or []):
        return True
    text = display_text(message)
    return text.startswith(SUMMARY_PREFIX) or (message.get("role") == "user" and COMPACTION_SUMMARY_MARK in text)


def settings_row_for(*, profile: str, flow: Flow | None) -> SummarizerSettings | None:
    """The row that applies (flow override, else the profile default) without creating anything."""
    qs = SummarizerSettings.objects.filter(profile=profile)
    row = qs.filter(flow=flow).first() if flow is not None else None
    return row or qs.filter(flow__isnull=True).first()


# --- the chain page's satellites: events with cost, one event's summarizer calls, view versions

def chain_events_page(*, chain: Chain, limit: int | None = EVENTS_SHOWN,
                      only: EventFilter = ALL_BUT_SKIPPED) -> tuple[list[SummaryEvent], int]:
    """The newest `limit` events the filter lets through (all with None) with their summed LLM cost
    (`cost_usd`) and number of model calls (`llm_rows`), and how many events the filter lets through in all."""
    qs = only.apply(SummaryEvent.objects.filter(chain=chain))
    rows = qs.newest_with_cost()
    return list(rows if limit is None else rows[:limit]), qs.count()


def events_hidden(*, events: QuerySet[SummaryEvent], only: EventFilter) -> int:
    """How many of `events` the filter leaves out (the page says so, with a link to show them)."""
    return events.count() - only.apply(events).count()


def chain_event_detail(*, chain: Chain, event_id: int) -> tuple[SummaryEvent, list[LLMCall]] | None:
    """One event of the chain and the model calls it made, oldest first; None when it is not this chain's."""
    event = SummaryEvent.objects.filter(chain=chain, pk=event_id).with_model_calls().select_related("view").first()
    if event is None:
        return None
    return event, list(LLMCall.objects.filter(event=event).select_related("provider").order_by("id"))


def chain_view_versions(*, chain: Chain) -> list[dict[str, Any]]:
    """Every stored view version, newest first, without message bodies."""
    return list(ChainView.objects.filter(chain=chain).order_by("-version")
                .values("version", "raw_seq_to", "byte_size", "token_count", "created_at"))


def chain_view_version(*, chain: Chain, version: int) -> ChainView | None:
    return ChainView.objects.filter(chain=chain, version=version).first()


def chain_message(*, chain: Chain, seq: int) -> Message | None:
    return chain.messages.filter(seq=seq).first()


# --- the flows list and the flow page beyond sizes: summarizer cost, memory notes, timeline

@dataclass(frozen=True)
class FlowCost:
    usd: float = 0.0
    calls: int = 0


def flow_costs(*, flow_ids: list[int]) -> dict[int, FlowCost]:
    """What the summarizer's model calls cost per flow (LLMCall.cost_usd), with the number of calls."""
    rows = (LLMCall.objects.filter(event__chain__agent__flow_id__in=flow_ids)
            .values("event__chain__agent__flow_id").annotate(usd=Sum("cost_usd"), calls=Count("id")))
    return {r["event__chain__agent__flow_id"]: FlowCost(usd=r["usd"] or 0.0, calls=r["calls"]) for r in rows}


@dataclass
class NoteFilter:
    kind: str = ""
    q: str = ""
    kinds: list[tuple[str, int]] = field(default_factory=list)  # every kind of the flow with its count
    total: int = 0
    matched: int = 0

    @property
    def active(self) -> bool:
        return bool(self.kind or self.q)


def flow_notes(*, flow: Flow, kind: str = "", q: str = "") -> tuple[list[MemoryNote], NoteFilter]:
    """The flow's memory notes, newest first, of one kind and/or containing `q` (case-insensitive)."""
    counts = list(MemoryNote.objects.filter(flow=flow).values("kind").annotate(n=Count("id")).order_by("kind"))
    kinds = [(c["kind"], c["n"]) for c in counts]
    notes = MemoryNote.objects.filter(flow=flow)
    kind = kind if kind in {k for k, _ in kinds} else ""
    if kind:
        notes = notes.filter(kind=kind)
    if q:
        notes = notes.filter(text__icontains=q)
    info = NoteFilter(kind=kind, q=q, kinds=kinds, total=sum(n for _, n in kinds), matched=notes.count())
    return list(notes.order_by("-id")[:NOTES_SHOWN]), info


def flow_timeline(*, flow: Flow, only: EventFilter = ALL_BUT_SKIPPED) -> list[SummaryEvent]:
    return list(only.apply(SummaryEvent.objects.filter(chain__agent__flow=flow)).select_related("chain__agent")
                .order_by("-id")[:TIMELINE_SHOWN])


def flow_live_chain_ids(*, flow: Flow) -> list[int]:
    """The flow's active chains (the agents section names them; the page's one socket hears them all)."""
    return list(Chain.objects.filter(agent__flow=flow, is_active=True).order_by("id").values_list("pk", flat=True))


def flow_cost(*, flow: Flow) -> FlowCost:
    return flow_costs(flow_ids=[flow.pk]).get(flow.pk, FlowCost())


def flow_extras(*, flow: Flow, note_kind: str, note_q: str) -> dict[str, Any]:
    notes, note_filter = flow_notes(flow=flow, kind=note_kind, q=note_q)
    return {"notes": notes, "note_filter": note_filter, "cost": flow_cost(flow=flow),
            "chain_costs": flow_chain_costs(flow=flow),
            "live_chain_ids": flow_live_chain_ids(flow=flow)}
