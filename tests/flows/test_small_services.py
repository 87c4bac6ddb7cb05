"""The small services the demo, the commands and the admin write through (instead of the ORM directly)."""
from __future__ import annotations

import pytest

from flows.config import model_window_ensure, settings_create
from flows.ingest import flow_set_status, user_ensure
from flows.models import Flow, ModelWindow, SettingsChange, SummarizerSettings

pytestmark = pytest.mark.django_db


def test_a_flows_status_changes_only_to_a_known_status(make_flow):
    flow = make_flow()
    flow_set_status(flow_id=flow.pk, status="finished")
    with pytest.raises(ValueError):
        flow_set_status(flow_id=flow.pk, status="exploded")
    assert Flow.objects.get(pk=flow.pk).status == "finished"


def test_a_password_is_returned_only_when_the_user_is_created(django_user_model):
    user, password = user_ensure(username="demo")
    assert password and user.check_password(password) and user.password != password
    again, second = user_ensure(username="demo")
    assert (again.pk, second) == (user.pk, None)


def test_an_admins_model_window_wins_over_the_demos(django_user_model):
    ModelWindow.objects.create(model="demo/m", context_window=32_768, source="admin")
    row = model_window_ensure(model="demo/m", context_window=16_384, max_output_tokens=2_048, source="demo")
    assert (row.context_window, row.source) == (32_768, "admin")
    assert model_window_ensure(model="other/m", context_window=8_192).context_window == 8_192


def test_a_settings_row_created_in_the_admin_records_its_creation(staff_user, make_flow):
    row = settings_create(row=SummarizerSettings(profile="assistant", flow=make_flow()), user=staff_user)
    change = SettingsChange.objects.get(settings=row)
    assert (row.updated_by, change.user, change.source, change.changes) == (staff_user, staff_user, "admin", {})
