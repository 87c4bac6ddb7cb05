"""`{% gateway_calls chain %}`: the chain's model calls through the gateway, for the chain page."""
from __future__ import annotations

from typing import Any

from django import template

from flows.gateway import chain_gateway_calls

register = template.Library()


@register.inclusion_tag("flows/partials/gateway_calls.html")
def gateway_calls(chain: Any) -> dict[str, Any]:
    return {"chain": chain, "calls": chain_gateway_calls(chain_id=chain.pk)}
