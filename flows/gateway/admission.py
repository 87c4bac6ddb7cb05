"""Admission of a call: who is calling, which chain it continues, where it goes upstream, in which mode.

Everything here runs in one worker-thread hop per request (`prepare_call`), so the event loop never blocks
on the database and a call costs one thread switch before the upstream request.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from flows.config import provider_for, provider_of_kind, settings_for, split_model_ref, token_ratio_for
from flows.gateway.fit import SentMessages, budget_error, call_guard_for, gateway_observed, gateway_view_prepare
from flows.gateway.protocols import CHAT, Protocol
from flows.gateway.reads import call_sent_messages
from flows.gateway.records import gateway_call_finish, gateway_call_start
from flows.gateway.sessions import call_identity
from flows.gateway.threads import ChainNotFound, gateway_thread
from flows.gateway.trace import request_params
from flows.gateway.wire import GatewayError, WireRequest
from flows.ingest import AppendError, InvalidToken, bearer_user, bearer_value
from flows.models import CallStatus, Chain, GatewayCall, GatewayMode, ProviderConfig, ProviderKind
from flows.pipeline import CallGuard, RequestNeeds

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
    needs: RequestNeeds | None = None  # what the request needs besides its messages (tools, schema, max output)
    replay: bool = False  # a resend of an earlier call the chain has moved past: its answer is not appended
    guard: CallGuard | None = None  # the bound and fallback of this call's summarizing (made when it first summarizes)
    compact_seconds: float = 0.0  # spent compacting after an overflow: added to the upstream's deadline, not taken


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
    default; the model stays as sent. `kind` is the provider kind the wire needs: when the flow's or the
    default provider is of another kind, the first provider of this kind (a /v1/messages call goes to an
    Anthropic endpoint whatever serves /v1/chat/completions)."""
    provider = named or provider_for(flow=chain.agent.flow)
    if named is None and (provider is None or provider.kind != kind) and kind != ProviderKind.OPENAI:
        provider = provider_of_kind(kind)
    if provider is None or provider.kind != kind:
        raise GatewayError(503, _NO_UPSTREAM.get(kind, _NO_UPSTREAM[str(ProviderKind.OPENAI)]),
                           type_="server_error", code="no_upstream")
    return provider, model


_NO_UPSTREAM = {
    str(ProviderKind.OPENAI): "no upstream model endpoint is configured: set LLM_SERVER_URL (or OPENAI_API_KEY) "
                              "or add an OpenAI-compatible provider in the admin",
    str(ProviderKind.ANTHROPIC): "no Anthropic upstream is configured: set ANTHROPIC_SERVER_URL / ANTHROPIC_API_KEY "
                                 "or add an Anthropic-compatible provider in the admin",
}


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


def _threaded_and_routed(user: Any, headers: Mapping[str, str], request: WireRequest, protocol: Protocol
                         ) -> tuple[Any, ProviderConfig, str, str]:
    """Thread the request into its chain and route it, in one transaction: a call refused here (no upstream,
    a bad mode header) rolls its flow, agent, chain and messages back, so a refused call leaves no litter."""
    named, model = split_model_ref(request.model)
    with transaction.atomic():
        threaded = _thread(user, request, headers, model)
        chain = threaded.chain  # locked and loaded with its agent and flow by the threading
        try:
            provider, model = resolve_upstream(named, model, chain, protocol.provider_kind)
            mode = _mode(headers, chain)
        except GatewayError as exc:
            if not chain.last_seq - threaded.appended:
                raise  # a chain this request made: rolled back, so no chain id to name
            exc.headers = chain_headers(chain)
            raise
    return threaded, provider, model, mode


def needs_of(protocol: Protocol, request: WireRequest, provider: ProviderConfig, model: str) -> RequestNeeds:
    """What the provider counts besides the messages (the wire's `extra_tokens`), with the token ratio learned
    for this provider and model."""
    extra = protocol.extra_tokens(request)
    return RequestNeeds(tools=extra.tools, schema=extra.schema, max_output=extra.reserve,
                        ratio=token_ratio_for(provider, model), provider=provider.name, model=model)


def prepare_call(user: Any, headers: Mapping[str, str], request: WireRequest,
                 protocol: Protocol = CHAT) -> PreparedCall:
    """Thread into a chain, route, pick the mode, build what goes upstream (fitted to the room the request
    leaves: `RequestNeeds`), open the call row. A manage-mode request that cannot fit even after compacting
    is refused with one clear 400 (its call recorded as failed)."""
    threaded, provider, model, mode = _threaded_and_routed(user, headers, request, protocol)
    chain = threaded.chain
    needs, guard = needs_of(protocol, request, provider, model), None
    if threaded.replay and threaded.retry_of is not None:
        sent = _replay_sent(threaded.retry_of, request, chain, mode)
    elif mode == GatewayMode.MANAGE:
        guard = call_guard_for(chain)
        sent = gateway_view_prepare(chain_id=chain.pk, needs=needs, model=model, guard=guard)
    else:
        sent = gateway_observed(request.messages, chain, model, needs)
    call = gateway_call_start(chain=chain, user=user, provider=provider, model=model, mode=mode,
                              stream=request.stream, request_messages=len(request.messages),
                              appended=threaded.appended, sent=sent,
                              request_params=request_params(request.body, headers),
                              request_hash=threaded.head_hash, retry_of=threaded.retry_of)
    if mode == GatewayMode.MANAGE and not sent.fits:
        message = budget_error(sent, model)
        if guard is not None and guard.failures():  # fail mode: why compacting could not make it fit
            message += f"; the summary model failed: {guard.failures()}"[:1000]
        gateway_call_finish(call=call, status=CallStatus.FAILED, http_status=400, latency_ms=sent.summarize_ms,
                            error=message)
        error = GatewayError(400, message, code="context_length_exceeded")
        error.headers = chain_headers(chain)
        raise error
    return PreparedCall(user=user, chain=chain, head_hash=threaded.head_hash, provider=provider, model=model,
                        mode=mode, sent=sent, call=call, history=request.messages,
                        caller=protocol.api_key(headers) or "", protocol=protocol, wire=request, needs=needs,
                        replay=threaded.replay, guard=guard)


def _replay_sent(call_id: int, request: WireRequest, chain: Chain, mode: str) -> SentMessages:
    """What a replay sends: what the call it repeats sent (the same request, the same upstream input), not
    the chain's newer state. Observe mode after a manage-mode original sends the agent's own messages."""
    original = GatewayCall.objects.get(pk=call_id)
    if mode == GatewayMode.OBSERVE and original.mode != GatewayMode.OBSERVE:
        return SentMessages(list(request.messages), None, 0, exact=False)
    same_chain = original.chain_id == chain.pk  # else a compaction rotated it: its references are another chain's
    sent = SentMessages(call_sent_messages(original), original.sent_view_version if same_chain else None,
                        original.sent_raw_seq_to if same_chain else 0,
                        exact=same_chain and original.sent_messages is None, tokens=original.sent_tokens,
                        budget=original.budget)
    budget = original.budget or {}
    if mode == GatewayMode.MANAGE and budget.get("max_output_sent") != budget.get("max_output_asked"):
        sent.max_output = budget.get("max_output_sent")
    return sent
