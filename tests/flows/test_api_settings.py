"""/api/settings/{profile}: read defaults or a flow's override; staff change defaults, owners their flows."""
from __future__ import annotations

import pytest

from flows.models import SettingsChange, SummarizerSettings
from tests.app_fixtures import JsonClient

pytestmark = pytest.mark.django_db


def test_it_reads_the_profile_defaults_with_field_metadata(api_client):
    body = api_client.get("/api/settings/assistant").json()
    assert body["scope"] == "defaults" and body["values"]["last_sec_bytes"] == 76800
    use_qa = next(f for f in body["fields"] if f["name"] == "use_qa")
    assert use_qa["editable"] is False and use_qa["env"] is None


def test_an_unknown_profile_is_a_404(api_client):
    assert api_client.get("/api/settings/robot").status_code == 404


def test_only_staff_change_the_defaults(api_client, staff_user):
    refused = api_client.put("/api/settings/agent", {"settings": {"last_sec_bytes": 40000}})
    assert refused.status_code == 403
    staff = JsonClient()
    staff.force_login(staff_user)
    resp = staff.put("/api/settings/agent", {"settings": {"last_sec_bytes": 40000}})
    assert resp.status_code == 200 and resp.json()["changed"] == {"last_sec_bytes": [51200, 40000]}
    assert SettingsChange.objects.get().source == "api"


def test_an_owner_changes_their_flows_override_only(api_client, make_flow):
    flow = make_flow()
    resp = api_client.put(f"/api/settings/agent?flow={flow.pk}", {"last_sec_bytes": 30000})
    assert resp.status_code == 200 and resp.json()["scope"] == "flow"
    assert api_client.get(f"/api/settings/agent?flow={flow.pk}").json()["values"]["last_sec_bytes"] == 30000
    assert api_client.get("/api/settings/agent").json()["values"]["last_sec_bytes"] == 51200


def test_invalid_settings_are_a_400_with_field_messages_and_create_no_override(api_client, make_flow):
    flow = make_flow()
    resp = api_client.put(f"/api/settings/agent?flow={flow.pk}", {"settings": {"keep_qa_sections": 50}})
    assert resp.status_code == 400
    assert resp.json()["error"] == "invalid_settings" and "keep_qa_sections" in resp.json()["detail"]
    assert not SummarizerSettings.objects.filter(flow=flow).exists()


def test_another_users_flow_settings_are_a_404(api_client, make_flow, other_user):
    theirs = make_flow(owner=other_user)
    assert api_client.get(f"/api/settings/agent?flow={theirs.pk}").status_code == 404
    assert api_client.put(f"/api/settings/agent?flow={theirs.pk}", {"last_sec_bytes": 3000}).status_code == 404
    assert api_client.get("/api/settings/agent?flow=abc").status_code == 400
