"""The OpenAI-compatible gateway (`/v1/`): agents' model calls threaded into chains, observed or managed.

A call runs: `views` (endpoints) -> `admission` (token, threading via `threads`/`prefixes`, routing, mode,
what goes upstream via `fit`, the call row via `records`) -> `calls` (forward, overflow retry, stream via `sse`,
`upstream`) -> `records`. `hops` runs the ORM work off the event loop, `asgi` serves `/v1/` without the page
middleware, `reads` and `page` show calls, `recovery` closes calls a stopped server left running, `sweep`
closes whatever is still "running" long after it could be (calls, events, half-written imports) in every server,
`connection_check` tests a provider's connection for the providers page.
"""
from flows.gateway.asgi import GatewayHandler, by_path
from flows.gateway.connection_check import ProviderCheck, provider_check
from flows.gateway.page import gateway_call_page
from flows.gateway.reads import chain_agent_loops, chain_gateway_calls
from flows.gateway.recovery import calls_abandoned_after_seconds, gateway_calls_close_interrupted
from flows.gateway.sweep import Swept, abandoned_sweep, sweeper_start

__all__ = [
    "gateway_call_page", "GatewayHandler", "ProviderCheck", "provider_check", "by_path",
    "calls_abandoned_after_seconds", "chain_agent_loops", "chain_gateway_calls", "gateway_calls_close_interrupted",
    "Swept", "abandoned_sweep", "sweeper_start",
]
