"""Windows per routed provider through the real server: two scripted upstreams, each with its own GET /v1/models,
each call's window discovered from the provider its `provider/model` prefix routed it to (exact id), and the call
and chain pages naming where the window came from."""
from __future__ import annotations

import urllib.request
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from tests.gateway.agent_loop import SYSTEM, TOOLS
from tests.gateway.conftest import Gateway
from tests.gateway.upstream_fake import FakeUpstream

pytestmark = pytest.mark.timeout(300)

SHARED = "lab-shared-model"  # one model id both providers serve, with different windows
WINDOWS = {"alpha": 40960, "beta": 65536}


@pytest.fixture(scope="module")
def routed(gateway: Gateway) -> Iterator[dict[str, FakeUpstream]]:
    upstreams = {name: FakeUpstream(window_tokens=window) for name, window in WINDOWS.items()}
    for name, upstream in upstreams.items():
        upstream.models = [{"id": "/models/other.gguf", "meta": {"n_ctx": 8192}},
                           {"id": SHARED, "object": "model", "max_model_len": WINDOWS[name]}]
        gateway.shell(f"from flows.models import ProviderConfig\nProviderConfig.objects.update_or_create("
                      f"name={name!r}, defaults={{'kind': 'openai', 'base_url': {upstream.url!r}, "
                      f"'model': {SHARED!r}}})")
    try:
        yield upstreams
    finally:  # the package's other tests share this server: they never meet these providers
        gateway.shell(f"from flows.models import ProviderConfig\nProviderConfig.objects.filter("
                      f"name__in={sorted(WINDOWS)!r}).delete()")
        for upstream in upstreams.values():
            upstream.close()


def _call(gateway: Gateway, model: str, task: str) -> tuple[int, dict[str, Any]]:
    client = openai.OpenAI(base_url=gateway.v1, api_key=gateway.token, max_retries=0, timeout=60)
    raw = client.chat.completions.with_raw_response.create(
        model=model, messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": task}], tools=TOOLS)
    chain_id = int(raw.headers["X-Chain-Id"])
    call = gateway.query(f"GatewayCall.objects.filter(chain_id={chain_id}).values('pk', 'model', 'provider__name', "
                         "'budget').last()")
    return chain_id, call


def _page(gateway: Gateway, path: str) -> str:
    request = urllib.request.Request(gateway.base + path, headers={"Cookie": f"sessionid={gateway.creds['session']}"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.read().decode()


def test_each_call_gets_the_window_its_routed_provider_reports_for_that_model(
        gateway: Gateway, routed: dict[str, FakeUpstream]) -> None:
    default_listings = gateway.upstream.listings
    for name, window in WINDOWS.items():
        chain_id, call = _call(gateway, f"{name}/{SHARED}", f"window check via {name}")
        assert (call["provider__name"], call["model"]) == (name, SHARED)
        assert (call["budget"]["window"], call["budget"]["window_source"]) == (window, f"discovered from {name}")
        assert routed[name].listings == 1 and routed[name].requests[-1]["body"]["model"] == SHARED
        call_page = _page(gateway, f"/chains/{chain_id}/calls/{call['pk']}/")
        assert f'<span class="window-source">discovered from {name}</span>' in call_page
        assert f"({SHARED}, discovered from {name})" in _page(gateway, f"/chains/{chain_id}/")
    assert gateway.upstream.listings == default_listings  # the default provider was never asked
    rows = gateway.query(f"sorted(ModelWindow.objects.filter(model={SHARED!r}).values_list('provider__name', "
                         "'context_window'))")
    assert rows == sorted([name, window] for name, window in WINDOWS.items())


def test_a_model_the_routed_listing_does_not_name_falls_back_to_the_catalog(
        gateway: Gateway, routed: dict[str, FakeUpstream]) -> None:
    _, call = _call(gateway, "alpha/gpt-4o-mini", "window check for a catalog model")
    assert (call["budget"]["window"], call["budget"]["window_source"]) == (128_000, "catalog")
    assert not gateway.query("ModelWindow.objects.filter(model='gpt-4o-mini').exists()")
