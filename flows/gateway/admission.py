"""Admission of a call: who is calling, which chain it continues, where it goes upstream, in which mode.

Everything here runs in one worker-thread hop per request (`prepare_call`), so the event loop never blocks
on the database and a call costs one thread switch before the upstream request.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser

from flows.config import provider_for, settings_for, split_model_ref
from flows.gateway.fit import SentMessages, gateway_observed, gateway_view_prepare
from flows.gateway.protocols import CHAT, Protocol
from flows.gateway.records import gateway_call_start
from flows.gateway.sessions import call_identity
from flows.gateway.threads import ChainNotFound, gateway_thread
from flows.gateway.wire import GatewayError, WireRequest
from flows.ingest import AppendError, InvalidToken, bearer_user, bearer_value
from flows.models import Chain, GatewayCall, GatewayMode, ProviderConfig, ProviderKind

__all__ = ["PreparedCall", "authenticate_bearer", "authenticate_key", "resolve_upstream", "prepare_call",
           "chain_headers"]


@dataclass
class PreparedCall:
    user: Any
    chain: Chain
    head_hash: str
    provider: ProviderConfig
    model: str
    mode: str
    sent: SentMessages
    call: GatewayCall
    history: list[dict[str, Any]]  # the request's messages: the chain's raw history once threaded
    caller: str = ""  # the request's API key: whose earlier calls' records it waits for
    protocol: Protocol = CHAT  # the wire format the agent speaks (and the upstream is spoken to in)
    wire: WireRequest | None = None  # the request as its protocol read it (for the protocol's record hook)
    last_body: bytes = b""  # what went upstream last (an overflow retry sends a compacted one)


def chain_headers(chain: Chain | None) -> dict[str, str]:
    if chain is None:
        return {}
    return {"X-Chain-Id": str(chain.pk), "X-Flow-Id": str(chain.agent.flow_id)}


def authenticate_bearer(headers: Mapping[str, str]) -> AbstractBaseUser:
    """The token's user; the gateway takes API tokens only (a browser session would be a CSRF hole)."""
    return authenticate_key(bearer_value(headers.get("Authorization", "")))


def authenticate_key(raw: str | None) -> AbstractBaseUser:
    """The user of our API token `raw`, however the wire carried it (see Protocol.api_key)."""
    if raw is None:
        raise GatewayError(401, "missing bearer token: use one of your pentagi-web API tokens as the API key",
                           code="invalid_api_key")
    try:
        return bearer_user(raw)
    except InvalidToken:
        raise GatewayError(401, "invalid API token", code="invalid_api_key") from None


def resolve_upstream(named: ProviderConfig | None, model: str, chain: Chain,
                     kind: str = str(ProviderKind.OPENAI)) -> tuple[ProviderConfig, str]:
    """The provider a `provider/model` prefix named (`split_model_ref`), else the flow's provider, else the
    default; the model stays as sent. `kind` is the provider kind the wire needs."""
    provider = named or provider_for(flow=chain.agent.flow)
    if provider is None or provider.kind != kind:
        raise GatewayError(503, "no upstream model endpoint is configured: set LLM_SERVER_URL (or OPENAI_API_KEY) "
                           "or add an OpenAI-compatible provider in the admin", type_="server_error",
                           code="no_upstream")
    return provider, model


def _pinned(headers: Mapping[str, str]) -> int | None:
    raw = headers.get("X-Chain-Id", "").strip()
    if not raw:
        return None
    if not (raw.isascii() and raw.isdigit()):
        raise GatewayError(400, "X-Chain-Id must be a chain id", code="invalid_chain_id")
    return int(raw)


def _mode(headers: Mapping[str, str], chain: Chain) -> str:
    asked = headers.get("X-Gateway-Mode", "").strip().lower()
    if asked:
        if asked not in GatewayMode.values:
            raise GatewayError(400, "X-Gateway-Mode must be 'observe' or 'manage'", code="invalid_mode")
        return asked
    return settings_for(profile=chain.agent.profile, flow=chain.agent.flow).gateway_mode


def _thread(user: Any, request: WireRequest, headers: Mapping[str, str], model: str) -> Any:
    identity = call_identity(headers, request.messages)  # the run's session and the agent making the call
    try:
        return gateway_thread(user=user, messages=request.messages, hashes=request.hashes,
                              pinned_chain_id=_pinned(headers), agent_type=identity.agent_type,
                              model_name=model, session=identity.session)
    except ChainNotFound:
        raise GatewayError(404, "no such chain (X-Chain-Id)", code="chain_not_found") from None
    except AppendError as exc:
        raise GatewayError(exc.status, f"messages: {exc}", code=exc.code) from None


def prepare_call(user: Any, headers: Mapping[str, str], request: WireRequest,
                 protocol: Protocol = CHAT) -> PreparedCall:
    """Thread into a chain, route, pick the mode, build what goes upstream, open the call row."""
    named, model = split_model_ref(request.model)
    threaded = _thread(user, request, headers, model)
    chain = threaded.chain  # locked and loaded with its agent and flow by the threading
    try:
        provider, model = resolve_upstream(named, model, chain, protocol.provider_kind)
        mode = _mode(headers, chain)
    except GatewayError as exc:
        exc.headers = chain_headers(chain)
        raise
    if mode == GatewayMode.MANAGE:
        sent = gateway_view_prepare(chain_id=chain.pk)
    else:
        sent = gateway_observed(request.messages, chain, model)
    call = gateway_call_start(chain=chain, user=user, provider=provider, model=model, mode=mode,
                              stream=request.stream, request_messages=len(request.messages),
                              appended=threaded.appended, sent=sent)
    return PreparedCall(user=user, chain=chain, head_hash=threaded.head_hash, provider=provider, model=model,
                        mode=mode, sent=sent, call=call, history=request.messages,
                        caller=protocol.api_key(headers) or "", protocol=protocol, wire=request)
