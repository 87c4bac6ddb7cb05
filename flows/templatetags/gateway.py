"""`{% gateway_calls chain %}` and `{% agent_loops chain %}`: the chain's model calls through the gateway and the
agent loops it flagged, for the chain page."""
from __future__ import annotations

from typing import Any

from django import template

from flows.gateway import chain_agent_loops, chain_gateway_calls

register = template.Library()


@register.inclusion_tag("flows/partials/gateway_calls.html")
def gateway_calls(chain: Any) -> dict[str, Any]:
    return {"chain": chain, "calls": chain_gateway_calls(chain_id=chain.pk)}


@register.inclusion_tag("flows/partials/agent_loops.html")
def agent_loops(chain: Any) -> dict[str, Any]:
    count, loops = chain_agent_loops(chain_id=chain.pk)
    return {"chain": chain, "count": count, "loops": loops}
