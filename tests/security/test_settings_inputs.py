"""Settings inputs are validated the same way on every path (API, settings page, admin form): a bad value is a
clear per-field error and nothing is saved; a good one is saved exactly."""
from __future__ import annotations

import pytest
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flows.config import settings_for, settings_values
from flows.core import FIELDS_BY_NAME, SETTINGS_FIELDS
from flows.models import SettingsChange, SummarizerSettings

pytestmark = pytest.mark.django_db
FUZZ = settings(max_examples=60, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
INT_FIELDS = [f.name for f in SETTINGS_FIELDS if f.kind in ("int", "optional_int")]
TEXT_FIELDS = [f.name for f in SETTINGS_FIELDS if f.kind == "str"]

wild = (st.integers(min_value=-2**80, max_value=2**80) | st.floats() | st.text(max_size=20) | st.booleans() |
        st.none() | st.lists(st.integers(), max_size=2) | st.sampled_from(["1e3", "0x10", " 42 ", "-0", "٣"]))


def _state(flow) -> tuple:
    rows = SummarizerSettings.objects.filter(flow=flow)
    return (rows.count(), [settings_values(r) for r in rows], SettingsChange.objects.count())


@pytest.fixture
def flow(make_flow):
    return make_flow()


@FUZZ
@given(name=st.sampled_from([f.name for f in SETTINGS_FIELDS]), value=wild)
def test_any_value_is_saved_as_validated_or_refused_per_field(api_client, flow, name, value):
    before = _state(flow)
    response = api_client.put(f"/api/settings/agent?flow={flow.pk}", {name: value})
    assert response.status_code in (200, 400), (name, value, response.content[:200])
    if response.status_code == 400:
        assert response.json()["error"] == "invalid_settings"
        assert name in response.json()["detail"] or set(response.json()["detail"]) <= set(FIELDS_BY_NAME)
        assert _state(flow) == before
    else:
        row = settings_for(profile="agent", flow=flow)
        lo, hi = FIELDS_BY_NAME[name].bounds
        stored = getattr(row, name)
        if isinstance(stored, int) and not isinstance(stored, bool):
            assert stored >= (lo or 0) and (hi is None or stored <= hi)


@pytest.mark.parametrize("name", INT_FIELDS)
@pytest.mark.parametrize("value", [-1, 2**63, 10**30, 1.5, "ten", True, [], {}])
def test_out_of_range_or_non_integer_numbers_are_refused(api_client, flow, name, value):
    before = _state(flow)
    response = api_client.put(f"/api/settings/agent?flow={flow.pk}", {name: value})
    if name == "reserve_tokens" and value is None:
        return
    assert response.status_code == 400, (name, value)
    assert name in response.json()["detail"]
    assert _state(flow) == before


@pytest.mark.parametrize("name", TEXT_FIELDS)
@pytest.mark.parametrize("value", ["x" * 100_000, "nul\x00inside", 5, ["a"]])
def test_bad_text_settings_are_refused_or_stored_verbatim(api_client, flow, name, value):
    before = _state(flow)
    response = api_client.put(f"/api/settings/agent?flow={flow.pk}", {name: value})
    assert response.status_code in (200, 400), (name, response.content[:200])
    if response.status_code == 400:
        assert _state(flow) == before
    else:
        assert getattr(settings_for(profile="agent", flow=flow), name) == value.strip()


def test_the_settings_page_refuses_bad_values_with_field_errors(user, flow):
    client = Client()
    client.force_login(user)
    before = _state(flow)
    response = client.post("/settings/", {"profile": "agent", "flow": flow.pk, "last_sec_bytes": "-5",
                                          "max_qa_sections": "lots", "keep_qa_sections": "1"})
    assert response.status_code == 400
    assert b"last_sec_bytes" in response.content or b"at least" in response.content
    assert _state(flow) == before


def test_only_staff_change_the_defaults(api_client, session_client):
    before = settings_values(settings_for(profile="agent"))
    assert api_client.put("/api/settings/agent", {"last_sec_bytes": 4096}).status_code == 403
    assert settings_values(settings_for(profile="agent")) == before


def test_the_admin_form_refuses_what_the_api_refuses(staff_user):
    client = Client()
    client.force_login(staff_user)
    row = settings_for(profile="agent")
    data = {**{k: v for k, v in settings_values(row).items() if v is not None and v is not False},
            "profile": "agent", "keep_qa_sections": 50, "max_qa_sections": 2}
    before = settings_values(row)
    response = client.post(f"/admin/flows/summarizersettings/{row.pk}/change/", data)
    assert response.status_code == 200  # the form again, with errors
    assert b"errorlist" in response.content
    row.refresh_from_db()
    assert settings_values(row) == before
