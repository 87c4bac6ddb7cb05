"""Where a call's window came from: the provider the call was routed to, on the call and chain pages (escaped)."""
from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from flows.gateway.admission import PreparedCall, prepare_call
from flows.gateway.protocols import CHAT
from flows.models import ModelWindow, ProviderConfig, ProviderKind

pytestmark = pytest.mark.django_db

HOSTILE = "<b>lab"  # a provider name is an admin's text: shown escaped


@pytest.fixture
def user(django_user_model: Any) -> Any:
    ProviderConfig.objects.create(name="default", kind=ProviderKind.OPENAI, base_url="http://127.0.0.1:9/v1",
                                  model="m", is_default=True)
    return django_user_model.objects.create_user("windows", password="x")


def _send(user: Any, model: str) -> PreparedCall:
    raw = json.dumps({"model": model, "messages": [{"role": "user", "content": "scan 10.0.0.9"}]}).encode()
    return prepare_call(user, {"X-Gateway-Mode": "observe"}, CHAT.parse(raw, {}, ""))


def _pages(user: Any, prepared: PreparedCall) -> tuple[str, str]:
    client = Client()
    client.force_login(user)
    chain_id = prepared.chain.pk
    return (client.get(f"/chains/{chain_id}/calls/{prepared.call.pk}/").content.decode(),
            client.get(f"/chains/{chain_id}/").content.decode())


def test_a_window_discovered_from_the_routed_provider_is_named_on_both_pages_escaped(user: Any) -> None:
    lab = ProviderConfig.objects.create(name=HOSTILE, kind=ProviderKind.OPENAI, base_url="http://127.0.0.1:9/v1")
    ModelWindow.objects.create(model="qwen-local", provider=lab, context_window=40960, source="discovered")
    prepared = _send(user, f"{HOSTILE}/qwen-local")
    assert prepared.call.budget["window_source"] == f"discovered from {HOSTILE}"
    call_page, chain_page = _pages(user, prepared)
    assert '<span class="window-source">discovered from &lt;b&gt;lab</span>' in call_page
    assert "(qwen-local, discovered from &lt;b&gt;lab)" in chain_page
    assert HOSTILE not in call_page and HOSTILE not in chain_page


def test_another_providers_discovery_is_not_this_calls_window(user: Any) -> None:
    other = ProviderConfig.objects.create(name="other", kind=ProviderKind.OPENAI, base_url="http://127.0.0.1:9/v1")
    ModelWindow.objects.create(model="gpt-4o-mini", provider=other, context_window=8192, source="discovered")
    prepared = _send(user, "gpt-4o-mini")  # routed to the default, which reported nothing
    assert (prepared.call.budget["window"], prepared.call.budget["window_source"]) == (128_000, "catalog")
    call_page, chain_page = _pages(user, prepared)
    assert '<span class="window-source">catalog</span>' in call_page and "(gpt-4o-mini, catalog)" in chain_page


def test_an_override_is_named_as_one(user: Any) -> None:
    ModelWindow.objects.create(model="qwen-local", context_window=20000, source="admin")
    call_page, _ = _pages(user, _send(user, "qwen-local"))
    assert '<span class="window-source">override (admin)</span>' in call_page


def test_an_unknown_window_says_so(user: Any) -> None:
    call_page, _ = _pages(user, _send(user, "my-homebrew-model-xyz"))
    assert "window unknown: lower the summarizer byte limits for small models" in call_page
