"""Provider API keys are write-only: never rendered back by the admin, the API or the pages."""
from __future__ import annotations

import pytest
from django.test import Client

from flows.models import ProviderConfig
from tests.security.urls_enum import all_routes, fill

pytestmark = pytest.mark.django_db
SECRET = "sk-live-SECRETVALUE-0123456789abcdef"


@pytest.fixture
def provider(make_flow) -> ProviderConfig:
    config = ProviderConfig.objects.create(name="paid", kind="openai", base_url="https://llm.example/v1",
                                           api_key=SECRET, model="gpt-4o", is_default=True)
    flow = make_flow()
    flow.provider = config
    flow.save(update_fields=["provider"])
    return config


def _reachable_paths(ids: dict) -> list[str]:
    paths = [fill(r, ids) for r in all_routes() if not r.template.startswith(("/accounts/logout", "/admin/logout"))]
    return [p for p in paths if p]


def test_no_page_api_or_admin_screen_shows_the_key(provider, staff_user, make_chain, tool_round):
    chain = make_chain(tool_round)
    ids = {"flow_id": chain.agent.flow_id, "chain_id": chain.pk, "seq": 1, "profile": "agent", "rest": "x",
           "app_label": "flows", "object_id": provider.pk, "model_name": "providerconfig", "id": staff_user.pk,
           "content_type_id": 1, "url": "flows/providerconfig/", "event_id": 1, "fmt": "openai"}
    client = Client()
    client.force_login(staff_user)
    seen = 0
    for path in _reachable_paths(ids) + ["/admin/flows/providerconfig/",
                                         f"/admin/flows/providerconfig/{provider.pk}/change/",
                                         "/admin/flows/providerconfig/?q=sk-live"]:
        response = client.get(path)
        if response.status_code == 200:
            seen += 1
            body = b"".join(response.streaming_content) if response.streaming else response.content
            assert SECRET.encode() not in body, path
            assert SECRET[-12:].encode() not in body, path  # not even most of it
    assert seen >= 15


def test_saving_the_form_without_a_key_keeps_the_stored_key(provider, staff_user):
    client = Client()
    client.force_login(staff_user)
    page = client.get(f"/admin/flows/providerconfig/{provider.pk}/change/").content.decode()
    assert 'type="password"' in page and SECRET not in page
    data = {"name": "paid", "kind": "openai", "base_url": "https://llm.example/v1", "api_key": "", "model": "gpt-4o",
            "timeout_seconds": 60, "max_attempts": 3, "max_output_tokens": 8192, "prompt_cost_per_mtok": 0,
            "completion_cost_per_mtok": 0, "is_default": "on"}
    response = client.post(f"/admin/flows/providerconfig/{provider.pk}/change/", data)
    assert response.status_code == 302, response.content[:500]
    provider.refresh_from_db()
    assert provider.api_key == SECRET
