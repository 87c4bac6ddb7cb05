"""Admin: history is read-only, settings edits are validated and logged, .env export, masked provider keys."""
from __future__ import annotations

import pytest

from flows.config import settings_for, settings_values
from flows.core import SETTINGS_FIELDS
from flows.models import ProviderConfig, SettingsChange

pytestmark = pytest.mark.django_db


def form_data(row, **changes) -> dict:
    data = {"profile": row.profile, "flow": row.flow_id or ""}
    for name, value in {**settings_values(row), **changes}.items():
        if isinstance(value, bool):
            if value:
                data[name] = "on"
        else:
            data[name] = "" if value is None else value
    data.update({"changes-TOTAL_FORMS": 0, "changes-INITIAL_FORMS": 0})
    return data


def test_every_model_has_an_admin_page(staff_client_for, make_chain, tool_round):
    make_chain(messages=tool_round)
    settings_for(profile="agent")
    for name in ("flow", "agent", "chain", "message", "chainview", "viewsection", "summaryevent", "llmcall",
                 "memorynote", "summarizersettings", "settingschange", "providerconfig", "modelwindow", "apitoken"):
        assert staff_client_for.get(f"/admin/flows/{name}/").status_code == 200, name


def test_messages_cannot_be_edited_or_deleted_in_the_admin(staff_client_for, make_chain, tool_round):
    row = make_chain(messages=tool_round).messages.first()
    resp = staff_client_for.post(f"/admin/flows/message/{row.pk}/change/", {"content": '"x"'})
    assert resp.status_code == 403
    assert staff_client_for.post(f"/admin/flows/message/{row.pk}/delete/", {"post": "yes"}).status_code == 403
    row.refresh_from_db()
    assert row.content == "You are a pentester."


def test_a_valid_settings_edit_is_saved_through_the_service_with_history(staff_client_for, staff_user):
    row = settings_for(profile="agent")
    resp = staff_client_for.post(f"/admin/flows/summarizersettings/{row.pk}/change/",
                             form_data(row, last_sec_bytes=40000))
    assert resp.status_code == 302
    row.refresh_from_db()
    assert row.last_sec_bytes == 40000
    change = SettingsChange.objects.get()
    assert change.changes == {"last_sec_bytes": [51200, 40000]} and change.user == staff_user


def test_an_invalid_settings_edit_shows_the_error_and_saves_nothing(staff_client_for):
    row = settings_for(profile="agent")
    resp = staff_client_for.post(f"/admin/flows/summarizersettings/{row.pk}/change/",
                             form_data(row, keep_qa_sections=20))
    assert resp.status_code == 200
    assert "cannot exceed the number of QA sections kept" in resp.content.decode()
    row.refresh_from_db()
    assert row.keep_qa_sections == 1 and not SettingsChange.objects.exists()


def test_the_export_action_downloads_a_dotenv_file(staff_client_for):
    row = settings_for(profile="assistant")
    resp = staff_client_for.post("/admin/flows/summarizersettings/",
                             {"action": "export_env", "_selected_action": [row.pk]})
    assert resp.status_code == 200 and resp["Content-Type"].startswith("text/plain")
    text = resp.content.decode()
    assert "ASSISTANT_SUMMARIZER_LAST_SEC_BYTES=76800" in text
    assert len([ln for ln in text.splitlines() if "=" in ln and not ln.startswith("#")]) == \
        len([f for f in SETTINGS_FIELDS if f.env["assistant"]])


def test_provider_keys_are_never_shown_and_a_blank_key_keeps_the_old_one(staff_client_for):
    provider = ProviderConfig.objects.create(name="openai", kind="openai", api_key="sk-secret-123456789")
    page = staff_client_for.get(f"/admin/flows/providerconfig/{provider.pk}/change/").content.decode()
    assert "sk-secret-123456789" not in page
    data = {"name": "openai", "kind": "openai", "base_url": "", "api_key": "", "model": "gpt-4o-mini",
            "timeout_seconds": 60, "max_attempts": 3, "max_output_tokens": 8192, "prompt_cost_per_mtok": 0,
            "completion_cost_per_mtok": 0}
    assert staff_client_for.post(f"/admin/flows/providerconfig/{provider.pk}/change/", data).status_code == 302
    provider.refresh_from_db()
    assert provider.api_key == "sk-secret-123456789" and provider.model == "gpt-4o-mini"


def test_api_tokens_show_only_their_prefix(staff_client_for, api_token):
    page = staff_client_for.get("/admin/flows/apitoken/").content.decode()
    assert api_token not in page and api_token[:10] in page
