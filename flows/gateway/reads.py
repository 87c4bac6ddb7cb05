"""Reads of gateway calls: the calls of a chain and, for one call, what went to the model beside the raw chain."""
from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.http import Http404

from flows.models import AgentLoop, Chain, ChainView, GatewayCall, Message

__all__ = ["CALLS_SHOWN", "LOOPS_SHOWN", "chain_gateway_calls", "chain_agent_loops", "gateway_call_visible",
           "call_sent_messages", "call_raw_messages"]

CALLS_SHOWN = 50
LOOPS_SHOWN = 10


def chain_agent_loops(*, chain_id: int, limit: int = LOOPS_SHOWN) -> tuple[int, list[AgentLoop]]:
    """How many agent loops the chain has had, and the newest of them (latest repetition first)."""
    loops = AgentLoop.objects.filter(chain_id=chain_id)
    return loops.count(), list(loops.order_by("-updated_at", "-pk")[:limit])


def chain_gateway_calls(*, chain_id: int, limit: int = CALLS_SHOWN) -> list[GatewayCall]:
    """The newest calls of the chain, newest first (without the stored message lists)."""
    qs: QuerySet[GatewayCall] = GatewayCall.objects.filter(chain_id=chain_id).defer("sent_messages",
                                                                                    "response_message")
    return list(qs.order_by("-id")[:limit])


def gateway_call_visible(*, user: Any, chain_id: int, call_id: int) -> GatewayCall:
    if not Chain.objects.visible_to(user).filter(pk=chain_id).exists():
        raise Http404("no such chain")
    call = GatewayCall.objects.select_related("chain__agent__flow", "provider").filter(
        pk=call_id, chain_id=chain_id).first()
    if call is None:
        raise Http404("no such call")
    return call


def call_sent_messages(call: GatewayCall) -> list[dict[str, Any]]:
    """Exactly what went upstream (the last attempt): stored, or rebuilt from the referenced stored state."""
    if call.sent_messages is not None:
        return list(call.sent_messages)
    head: list[dict[str, Any]] = []
    after = 0
    if call.sent_view_version:
        view = ChainView.objects.filter(chain_id=call.chain_id, version=call.sent_view_version).first()
        if view is not None:
            head, after = list(view.messages), view.raw_seq_to
    rows = Message.objects.filter(chain_id=call.chain_id, seq__gt=after, seq__lte=call.sent_raw_seq_to)
    return head + [row.to_dict() for row in rows.order_by("seq")]


def call_raw_messages(call: GatewayCall) -> list[Message]:
    """The raw chain as it stood when the call went out."""
    return list(Message.objects.filter(chain_id=call.chain_id, seq__lte=call.sent_raw_seq_to).order_by("seq"))
