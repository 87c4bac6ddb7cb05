"""Test a provider's connection (the providers page's *Test connection*): list its models, which needs the base
URL and the key to be right but spends no tokens. Nothing of the key or of the upstream's body is shown back."""
from __future__ import annotations

import json
from dataclasses import dataclass

import httpx2

from flows.gateway import upstream
from flows.gateway.protocols.anthropic import messages_url, upstream_headers
from flows.models import ProviderConfig, ProviderKind

__all__ = ["ProviderCheck", "provider_check", "CHECK_TIMEOUT_SECONDS"]

CHECK_TIMEOUT_SECONDS = 15.0  # a page waits for it: shorter than a summary call's timeout
SHOWN_MODELS = 5


@dataclass(frozen=True)
class ProviderCheck:
    ok: bool
    detail: str


def _endpoint(provider: ProviderConfig) -> tuple[str, dict[str, str]]:
    if provider.kind == ProviderKind.ANTHROPIC:
        return messages_url(provider, path="/models"), upstream_headers(provider, {})
    return upstream.models_endpoint(provider)


def _model_ids(body: bytes) -> list[str] | None:
    try:
        data = json.loads(body).get("data")
    except (ValueError, AttributeError):
        return None
    if not isinstance(data, list):
        return None
    return [str(item["id"]) for item in data if isinstance(item, dict) and isinstance(item.get("id"), str)]


def _refusal(status: int) -> str:
    if status in (401, 403):
        return f"the key was refused (HTTP {status})"
    if status == 404:
        return "no model listing at this base URL (HTTP 404): check the base URL"
    return f"the endpoint answered HTTP {status}"


def _listing(provider: ProviderConfig, ids: list[str]) -> str:
    shown = ", ".join(ids[:SHOWN_MODELS]) + (" …" if len(ids) > SHOWN_MODELS else "")
    found = f"{len(ids)} model{'s' if len(ids) != 1 else ''}" + (f" ({shown})" if ids else "")
    if provider.model and ids and provider.model not in ids:
        return f"reachable, {found}; the configured model {provider.model} is not among them"
    return f"reachable, {found}"


def provider_check(provider: ProviderConfig) -> ProviderCheck:
    """Whether `provider` answers its model listing with this key; the extractive kind has nothing to reach."""
    if provider.kind == ProviderKind.EXTRACTIVE:
        return ProviderCheck(True, "the offline extractive summarizer: nothing to connect to")
    url, headers = _endpoint(provider)
    try:
        response = httpx2.get(url, headers=headers, timeout=min(provider.timeout_seconds, CHECK_TIMEOUT_SECONDS))
    except httpx2.HTTPError as exc:
        return ProviderCheck(False, upstream.upstream_error(exc).message)
    if response.status_code >= 400:
        return ProviderCheck(False, _refusal(response.status_code))
    ids = _model_ids(response.content)
    if ids is None:
        return ProviderCheck(False, "the endpoint answered, but not with a model listing: check the base URL")
    return ProviderCheck(True, _listing(provider, ids))
