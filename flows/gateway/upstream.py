"""The upstream HTTP client: one httpx2.AsyncClient per process and event loop, reused across calls.

Retries are not ours to make here (an overflow retry is decided by `calls`); transport failures become
GatewayError with the status an OpenAI client expects: 502 unreachable/garbage, 504 too slow.
"""
from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx2

from flows.gateway.wire import GatewayError
from flows.models import ProviderConfig

__all__ = ["CONNECT_TIMEOUT_SECONDS", "client", "open_chat", "open_post", "chat_endpoint", "responses_endpoint",
           "list_models", "models_endpoint", "upstream_error"]

CONNECT_TIMEOUT_SECONDS = 10.0
DEFAULT_BASE_URL = "https://api.openai.com/v1"
_clients: dict[int, httpx2.AsyncClient] = {}


def client() -> httpx2.AsyncClient:
    """The process's client for the running loop (a client's pool belongs to the loop that opened it)."""
    loop = asyncio.get_running_loop()
    found = _clients.get(id(loop))
    if found is None or found.is_closed:
        found = httpx2.AsyncClient(timeout=httpx2.Timeout(None, connect=CONNECT_TIMEOUT_SECONDS),
                                   limits=httpx2.Limits(max_connections=200, max_keepalive_connections=50))
        _clients[id(loop)] = found
    return found


def _headers(provider: ProviderConfig) -> dict[str, str]:
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if provider.api_key:
        headers["Authorization"] = f"Bearer {provider.api_key}"
    return headers


def _url(provider: ProviderConfig, path: str) -> str:
    return (provider.base_url or DEFAULT_BASE_URL).rstrip("/") + path


def upstream_error(exc: BaseException) -> GatewayError:
    if isinstance(exc, (httpx2.TimeoutException, TimeoutError)):
        return GatewayError(504, "the upstream model endpoint did not answer in time", type_="server_error",
                            code="upstream_timeout")
    if isinstance(exc, httpx2.ConnectError):
        return GatewayError(502, "the upstream model endpoint is unreachable", type_="server_error",
                            code="upstream_unreachable")
    return GatewayError(502, f"the upstream connection failed: {type(exc).__name__}", type_="server_error",
                        code="upstream_failed")


def chat_endpoint(provider: ProviderConfig) -> tuple[str, dict[str, str]]:
    """URL and headers of an OpenAI-compatible provider's /chat/completions."""
    return _url(provider, "/chat/completions"), _headers(provider)


def models_endpoint(provider: ProviderConfig) -> tuple[str, dict[str, str]]:
    """URL and headers of an OpenAI-compatible provider's model listing (GET /models)."""
    return _url(provider, "/models"), _headers(provider)


def responses_endpoint(provider: ProviderConfig) -> tuple[str, dict[str, str]]:
    """URL and headers of an OpenAI-compatible provider's /responses (the Responses API)."""
    return _url(provider, "/responses"), _headers(provider)


async def open_post(url: str, body: bytes, headers: dict[str, str]) -> httpx2.Response:
    """POST `body` with the response left open (headers read, body not yet)."""
    request = client().build_request("POST", url, content=body, headers=headers)
    try:
        return await client().send(request, stream=True)
    except httpx2.HTTPError as exc:
        raise upstream_error(exc) from None


async def open_chat(provider: ProviderConfig, body: bytes) -> httpx2.Response:
    """POST /chat/completions with the response left open (headers read, body not yet)."""
    url, headers = chat_endpoint(provider)
    return await open_post(url, body, headers)


async def list_models(provider: ProviderConfig) -> list[dict[str, Any]]:
    try:
        response = await asyncio.wait_for(client().get(_url(provider, "/models"), headers=_headers(provider)),
                                          timeout=min(provider.timeout_seconds, 30.0))
    except (httpx2.HTTPError, TimeoutError) as exc:
        raise upstream_error(exc) from None
    if response.status_code >= 400:
        raise GatewayError(response.status_code, "the upstream refused the model listing", type_="server_error",
                           code="upstream_error", body=response.content)
    try:
        data = json.loads(response.content).get("data")
    except (ValueError, AttributeError):
        data = None
    if not isinstance(data, list):
        raise GatewayError(502, "the upstream's model listing is not OpenAI JSON", type_="server_error",
                           code="upstream_garbage")
    return [item for item in data if isinstance(item, dict) and isinstance(item.get("id"), str)]

