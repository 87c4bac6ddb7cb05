"""Model endpoints: provider configuration from the environment and the database, and model windows.

Environment variables are *initial values*: the first use creates (later uses update) one ProviderConfig row
named "env"; prices, timeouts and other fields the environment does not set stay admin-editable. A model's
context window comes from, in order: an admin (or env) override row, a window discovered from the endpoint's
`GET /models` of the provider the call is routed to (for exactly that model id), the built-in catalog; unknown
stays None (the window step is then skipped).

The raw API key never leaves this module except inside the openai client: logs and errors use
`ProviderConfig.masked_key` or nothing at all.
"""
from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping
from typing import Any

import openai
from django.db import IntegrityError, transaction

from flows.config.table_copy import TableCopy, outside_transactions
from flows.engine import ModelInfo, lookup_model, window_from_models_payload
from flows.models import Flow, ModelWindow, ProviderConfig, ProviderKind

__all__ = [
    "ENV_PROVIDER_NAME", "DEFAULT_OPENAI_BASE_URL", "DEFAULT_OPENAI_MODEL", "DISCOVERY_TIMEOUT_SECONDS",
    "provider_from_env", "provider_for", "openai_client_for", "discover_window", "model_window_for",
    "split_model_ref", "routed_model_id", "providers_changed", "PROVIDERS", "provider_of_kind",
    "ANTHROPIC_PROVIDER_NAME",
]

logger = logging.getLogger(__name__)

ENV_PROVIDER_NAME = "env"
ANTHROPIC_PROVIDER_NAME = "anthropic"  # the provider PentAGI's ANTHROPIC_SERVER_URL / ANTHROPIC_API_KEY configure
DEFAULT_ANTHROPIC_BASE_URL = "https://api.anthropic.com"
DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1"
DEFAULT_OPENAI_MODEL = "gpt-4o-mini"
DISCOVERY_TIMEOUT_SECONDS = 10.0
# ModelWindow.source values; every source except "discovered" is an operator's override.
SOURCE_DISCOVERED = "discovered"
SOURCE_ENV = "env"


def _env_values(env: Mapping[str, str]) -> dict[str, str] | None:
    """ProviderConfig fields the environment sets, or None when it names no endpoint at all."""
    server_url = env.get("LLM_SERVER_URL", "").strip()
    openai_key = env.get("OPENAI_API_KEY", "").strip()
    if not server_url and not openai_key:
        return None
    if server_url:
        values = {"base_url": server_url, "api_key": env.get("LLM_SERVER_KEY", "").strip() or openai_key}
    else:
        values = {"base_url": env.get("OPENAI_BASE_URL", "").strip() or DEFAULT_OPENAI_BASE_URL,
                  "api_key": openai_key}
    model = env.get("LLM_SERVER_MODEL", "").strip()
    if model:
        values["model"] = model
    return values


def _anthropic_values(env: Mapping[str, str]) -> dict[str, str] | None:
    """The Anthropic provider's fields from PentAGI's variables, or None when neither is set."""
    url, key = env.get("ANTHROPIC_SERVER_URL", "").strip(), env.get("ANTHROPIC_API_KEY", "").strip()
    if not url and not key:
        return None
    return {"base_url": url or DEFAULT_ANTHROPIC_BASE_URL, "api_key": key}


def _save_anthropic_provider(values: dict[str, str]) -> None:
    """The "anthropic" provider (kind anthropic, never the default: it serves the gateway's /v1/messages)."""
    with transaction.atomic():
        provider = ProviderConfig.objects.select_for_update().filter(name=ANTHROPIC_PROVIDER_NAME).first()
        provider = provider or ProviderConfig(name=ANTHROPIC_PROVIDER_NAME)
        changed = provider.pk is None or provider.kind != ProviderKind.ANTHROPIC
        provider.kind = ProviderKind.ANTHROPIC
        for field, value in values.items():
            changed = changed or getattr(provider, field) != value
            setattr(provider, field, value)
        if changed:
            provider.save()


def provider_of_kind(kind: str) -> ProviderConfig | None:
    """The default provider when it is of `kind`, else the first of that kind by name (after syncing the env)."""
    default = provider_for()
    if default is not None and default.kind == kind:
        return default
    return ProviderConfig.objects.filter(kind=kind).order_by("name").first()


def provider_from_env(environ: Mapping[str, str] | None = None) -> ProviderConfig | None:
    """Create or update the "env" provider from OPENAI_* / LLM_SERVER_* variables; None when none is set.

    It becomes the default provider when no other provider is the default. LLM_SERVER_CONTEXT_TOKENS
    (llama.cpp and Ollama do not report their window) records the model's window unless an admin row exists.
    ANTHROPIC_SERVER_URL / ANTHROPIC_API_KEY (PentAGI's) create or update the "anthropic" provider.
    """
    env = os.environ if environ is None else environ
    anthropic = _anthropic_values(env)
    if anthropic is not None:
        try:
            _save_anthropic_provider(anthropic)
        except IntegrityError:  # another process created it at the same moment
            _save_anthropic_provider(anthropic)
    values = _env_values(env)
    if values is None:
        provider = None
    else:
        try:
            provider = _save_env_provider(values)
        except IntegrityError:  # another process created it (or took the default) at the same moment
            provider = _save_env_provider(values)
        _save_env_window(provider.model, env.get("LLM_SERVER_CONTEXT_TOKENS", ""))
    if environ is None:
        global _synced_env
        _synced_env = _env_key(env)
    return provider


# The process environment as last synced into the "env" row: model calls (every gateway request) skip the
# sync's transaction while the variables are unchanged and a default provider exists.
_synced_env: tuple[Any, ...] | None = None


def _env_key(env: Mapping[str, str]) -> tuple[Any, ...]:
    values, anthropic = _env_values(env), _anthropic_values(env)
    return (tuple(sorted(values.items())) if values else None, env.get("LLM_SERVER_CONTEXT_TOKENS", ""),
            tuple(sorted(anthropic.items())) if anthropic else None)


def _save_env_provider(values: dict[str, str]) -> ProviderConfig:
    with transaction.atomic():
        provider = ProviderConfig.objects.select_for_update().filter(name=ENV_PROVIDER_NAME).first()
        if provider is None:
            provider = ProviderConfig(name=ENV_PROVIDER_NAME, model=DEFAULT_OPENAI_MODEL)
        changed = provider.pk is None or provider.kind != ProviderKind.OPENAI
        provider.kind = ProviderKind.OPENAI
        for field, value in values.items():
            if getattr(provider, field) != value:
                setattr(provider, field, value)
                changed = True
        if not provider.is_default and not ProviderConfig.objects.filter(is_default=True).exists():
            provider.is_default = True
            changed = True
        if changed:
            provider.save()
    return provider


def _save_env_window(model: str, raw_tokens: str) -> None:
    try:
        tokens = int(raw_tokens.strip() or 0)
    except ValueError:
        logger.warning("LLM_SERVER_CONTEXT_TOKENS=%r is not a number: ignored", raw_tokens)
        return
    if tokens <= 0 or not model:
        return
    row = _override(model)
    if row is not None and row.source != SOURCE_ENV:
        return  # an admin override wins over the environment
    ModelWindow.objects.update_or_create(model=model, provider=None, defaults={"context_window": tokens,
                                                                               "source": SOURCE_ENV})


# Providers as last read, for lookups outside transactions (every gateway call makes one): see table_copy.
# A name not in the copy is read again (a provider another process just created).
PROVIDERS: TableCopy[ProviderConfig] = TableCopy(ProviderConfig, "providers")
providers_changed = PROVIDERS.changed


def _find(**match: Any) -> ProviderConfig | None:
    """The first provider (by pk) whose fields equal `match`, from the copy where it may be used."""
    if not outside_transactions():
        return ProviderConfig.objects.filter(**match).order_by("pk").first()
    return PROVIDERS.first(lambda row: all(getattr(row, key) == value for key, value in match.items()),
                           reread_on_miss=True)


def provider_for(*, flow: Flow | None = None, name: str | None = None) -> ProviderConfig | None:
    """The provider to use: a named one, else the flow's own, else the default (after syncing the env)."""
    if name:
        return _find(name=name)
    if flow is not None and flow.provider_id:
        return _find(pk=flow.provider_id)
    if _synced_env == _env_key(os.environ):
        default = _find(is_default=True)
        if default is not None:
            return default
    provider_from_env()
    return _find(is_default=True)


def split_model_ref(ref: str) -> tuple[ProviderConfig | None, str]:
    """"provider/model" where provider names a ProviderConfig, else the whole text is a model id.

    Model ids may themselves contain slashes (OpenRouter's "meta-llama/llama-3-8b"), so only a prefix that is
    a configured provider's name is taken as one.
    """
    ref = ref.strip()
    head, sep, tail = ref.partition("/")
    if sep and tail:
        provider = _find(name=head)
        if provider is not None:
            return provider, tail.strip()
    return None, ref


def openai_client_for(provider: ProviderConfig, *, timeout_seconds: float | None = None,
                      transport: Any = None) -> openai.OpenAI:
    """An openai client for the endpoint; retries are ours (flows.pipeline.llm), so the client's own are off.

    `transport` (an httpx2 transport, e.g. flows.pipeline.llm.deadline.DeadlineTransport) carries the requests."""
    timeout = provider.timeout_seconds if timeout_seconds is None else timeout_seconds
    http_client = openai.DefaultHttpxClient(transport=transport) if transport is not None else None
    # Local servers (llama.cpp, vLLM, Ollama) accept any key, but the client refuses an empty one.
    return openai.OpenAI(base_url=provider.base_url or DEFAULT_OPENAI_BASE_URL,
                         api_key=provider.api_key or "not-needed", timeout=timeout, max_retries=0,
                         http_client=http_client)


def _models_payload(provider: ProviderConfig) -> Any:
    client = openai_client_for(provider, timeout_seconds=min(provider.timeout_seconds, DISCOVERY_TIMEOUT_SECONDS))
    try:
        return client.models.with_raw_response.list().http_response.json()
    finally:
        client.close()


def routed_model_id(provider: ProviderConfig, model: str) -> str:
    """The id the provider serves `model` under: without a `provider/` prefix naming it (the gateway strips
    it before forwarding, so the provider's listing never carries it)."""
    model = model.strip()
    head, sep, tail = model.partition("/")
    return tail.strip() if sep and tail.strip() and head == provider.name else model


def discover_window(provider: ProviderConfig, model: str) -> ModelInfo | None:
    """Read the provider's GET /models; store the window it reports for exactly `model` (as that provider's).

    Best effort: an unreachable endpoint, a listing without this model id or without a window for it gives
    None (logged, never raised) and stores nothing.
    """
    model = routed_model_id(provider, model)
    if provider.kind != ProviderKind.OPENAI or not model:
        return None
    try:
        payload = _models_payload(provider)
    except (openai.OpenAIError, ValueError) as exc:
        logger.warning("window discovery failed for provider %s: %s", provider.name, type(exc).__name__)
        return None
    info = window_from_models_payload(payload, model)
    if info is None:
        return None
    ModelWindow.objects.update_or_create(model=model, provider=provider, defaults={
        "context_window": info.context_window, "max_output_tokens": info.max_output_tokens,
        "source": SOURCE_DISCOVERED})
    return info


_discovery_tried: set[tuple[int, str, str]] = set()
_discovery_lock = threading.Lock()


def _discover_once(provider: ProviderConfig, model: str) -> None:
    """Ask the endpoint once per process and model: a listing without windows must not cost a request per fit."""
    if provider.kind != ProviderKind.OPENAI:
        return
    key = (provider.pk, provider.base_url, model)
    with _discovery_lock:
        if key in _discovery_tried:
            return
        _discovery_tried.add(key)
    discover_window(provider, model)


# Windows as last read (see table_copy): every gateway call looks its model's up.
WINDOWS: TableCopy[ModelWindow] = TableCopy(ModelWindow, "model_windows")


def _override(model: str) -> ModelWindow | None:
    """An operator's window for the model (admin, or LLM_SERVER_CONTEXT_TOKENS), whichever provider serves it."""
    if outside_transactions():
        return WINDOWS.first(lambda row: row.model == model and row.provider_id is None
                             and row.source != SOURCE_DISCOVERED)
    return ModelWindow.objects.filter(model=model, provider__isnull=True).exclude(source=SOURCE_DISCOVERED).first()


def _discovered(provider: ProviderConfig, model: str, discover: bool) -> ModelWindow | None:
    found = _discovered_row(provider, model)
    if found is None and discover:
        _discover_once(provider, model)
        found = _discovered_row(provider, model)
    return found


def _discovered_row(provider: ProviderConfig, model: str) -> ModelWindow | None:
    if outside_transactions():
        return WINDOWS.first(lambda row: row.model == model and row.provider_id == provider.pk
                             and row.source == SOURCE_DISCOVERED)
    return ModelWindow.objects.filter(model=model, provider=provider, source=SOURCE_DISCOVERED).first()


def model_window_for(*, flow: Flow | None = None, model: str | None = None, provider: ProviderConfig | None = None,
                     discover: bool = True) -> tuple[int | None, int | None, str]:
    """(context_window, max_output_tokens, source) of the model a call is served by; the source names where the
    window came from: "override (admin)" / "override (env)", "discovered from <provider>", "catalog", or
    "unknown" with both sizes None.

    `provider` is the provider the call is routed to (a gateway call's `provider/` prefix), else the flow's,
    else the default; `model` else the flow's model, else the provider's. Only that provider's windows count:
    with `discover` and a flow or provider given, a model it has not reported yet is looked up once on its
    GET /models (exact id).
    """
    discover = discover and (provider is not None or flow is not None)  # a bare model id (a page) asks no one
    provider = provider or provider_for(flow=flow)
    if not model and flow is not None:
        model = flow.model_name or (provider.model if provider is not None else "")
    ref = (model or "").strip()
    model = routed_model_id(provider, ref) if provider is not None else ref
    if not model:
        return None, None, "unknown"
    # an override written as agents name the model on that provider ("demo/pentest-agent-16k", the demo's own) is
    # the most specific; else the id the provider serves it under
    prefixed = f"{provider.name}/{model}" if provider is not None else ref
    row = next((found for found in map(_override, dict.fromkeys((prefixed, ref, model))) if found), None)
    if row is not None:
        return row.context_window, row.max_output_tokens, f"override ({row.source})"
    row = _discovered(provider, model, discover) if provider is not None else None
    if row is not None:
        return row.context_window, row.max_output_tokens, f"discovered from {provider.name}"  # type: ignore[union-attr]
    info = lookup_model(model)
    if info is not None:
        return info.context_window, info.max_output_tokens, "catalog"
    return None, None, "unknown"
