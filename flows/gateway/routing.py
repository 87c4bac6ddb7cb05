"""Who is calling, which chain the request continues, where it goes upstream and in which mode (sync: ORM).

Everything here runs in one worker-thread hop per request (`prepare_call`), so the event loop never blocks
on the database and a call costs one thread switch before the upstream request.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models.signals import post_delete, post_save
from django.utils import timezone

from flows.api.auth import LAST_USED_RESOLUTION
from flows.gateway.wire import ChatRequest, GatewayError
from flows.models import ApiToken, Chain, GatewayCall, GatewayMode, ProviderConfig, ProviderKind, hash_token
from flows.providers import provider_for, split_model_ref
from flows.services.gateway import ChainNotFound, gateway_thread
from flows.services.gateway_calls import SentMessages, gateway_call_start, gateway_observed, gateway_view_prepare
from flows.services.history import AppendError
from flows.settings_registry import settings_for

__all__ = ["PreparedCall", "authenticate_bearer", "tokens_changed", "TOKEN_CACHE_SECONDS",
           "resolve_upstream", "prepare_call", "chain_headers"]


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
    caller: str = ""  # the request's Authorization header: whose earlier calls' records it waits for


def chain_headers(chain: Chain | None) -> dict[str, str]:
    if chain is None:
        return {}
    return {"X-Chain-Id": str(chain.pk), "X-Flow-Id": str(chain.agent.flow_id)}


# Tokens as last checked, per process: every gateway call authenticates, and the lookup was a sizeable part of
# what the gateway adds to a call. Deleting a token or saving its user in this process drops the copy
# (`tokens_changed`); a change made by another process is seen within TOKEN_CACHE_SECONDS. Inside a
# transaction the table is read, so a write that is rolled back never lingers here.
TOKEN_CACHE_SECONDS = 2.0
TOKEN_CACHE_SIZE = 1000


@dataclass
class _Checked:
    checked_at: float
    token_id: int
    user: Any
    last_used_at: datetime | None


_checked: dict[str, _Checked] = {}
_checked_lock = threading.Lock()


def tokens_changed(**_: Any) -> None:
    """Drop the checked tokens (receiver of ApiToken and User saves and deletes): now and at commit."""
    _forget_tokens()
    transaction.on_commit(_forget_tokens)


def _forget_tokens() -> None:
    with _checked_lock:
        _checked.clear()


# The copy exists once this module is loaded, so this module is where edits are watched for (a user
# deactivated, say); the user model by its label, as settings name it.
for _sender in (ApiToken, settings.AUTH_USER_MODEL):
    post_save.connect(tokens_changed, sender=_sender, dispatch_uid=f"tokens_changed_save_{_sender}")
    post_delete.connect(tokens_changed, sender=_sender, dispatch_uid=f"tokens_changed_delete_{_sender}")


def authenticate_bearer(headers: Mapping[str, str]) -> AbstractBaseUser:
    """The token's user; the gateway takes API tokens only (a browser session would be a CSRF hole)."""
    scheme, _, raw = headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not raw.strip():
        raise GatewayError(401, "missing bearer token: use one of your pentagi-web API tokens as the API key",
                           code="invalid_api_key")
    key = hash_token(raw.strip())
    checked = _checked.get(key)
    if checked is None or time.monotonic() - checked.checked_at > TOKEN_CACHE_SECONDS \
            or transaction.get_connection().in_atomic_block:
        checked = _check(key)
    now = timezone.now()
    if checked.last_used_at is None or now - checked.last_used_at > LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=checked.token_id).update(last_used_at=now)
        checked.last_used_at = now
    return checked.user


def _check(key: str) -> _Checked:
    token = ApiToken.objects.select_related("user").filter(key_hash=key).first()
    if token is None or not token.user.is_active:
        with _checked_lock:
            _checked.pop(key, None)
        raise GatewayError(401, "invalid API token", code="invalid_api_key")
    checked = _Checked(time.monotonic(), token.pk, token.user, token.last_used_at)
    with _checked_lock:
        if len(_checked) >= TOKEN_CACHE_SIZE:
            _checked.clear()
        _checked[key] = checked
    return checked


def resolve_upstream(named: ProviderConfig | None, model: str, chain: Chain) -> tuple[ProviderConfig, str]:
    """The provider a `provider/model` prefix named (`split_model_ref`), else the flow's provider, else the
    default; the model stays as sent."""
    provider = named or provider_for(flow=chain.agent.flow)
    if provider is None or provider.kind != ProviderKind.OPENAI:
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


def _thread(user: Any, request: ChatRequest, headers: Mapping[str, str], model: str) -> Any:
    try:
        return gateway_thread(user=user, messages=request.messages, hashes=request.hashes,
                              pinned_chain_id=_pinned(headers),
                              agent_type=headers.get("X-Agent-Type", "").strip() or "primary_agent",
                              model_name=model)
    except ChainNotFound:
        raise GatewayError(404, "no such chain (X-Chain-Id)", code="chain_not_found") from None
    except AppendError as exc:
        raise GatewayError(exc.status, f"messages: {exc}", code=exc.code) from None


def prepare_call(user: Any, headers: Mapping[str, str], request: ChatRequest) -> PreparedCall:
    """Thread into a chain, route, pick the mode, build what goes upstream, open the call row."""
    named, model = split_model_ref(request.model)
    threaded = _thread(user, request, headers, model)
    chain = threaded.chain  # locked and loaded with its agent and flow by the threading
    try:
        provider, model = resolve_upstream(named, model, chain)
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
                        caller=headers.get("Authorization", ""))
