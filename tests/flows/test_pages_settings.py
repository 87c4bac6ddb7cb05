"""The settings page (every setting with default, unit, help; save with history; .env export; preview that saves
nothing) and the "compact now" form."""
from __future__ import annotations

import re

import pytest
from django.test import Client

from flows.config import settings_for
from flows.core import SETTINGS_FIELDS
from flows.models import SettingsChange, SummarizerSettings, SummaryEvent

pytestmark = pytest.mark.django_db


def csrf_post(client: Client, url: str, data: dict, *, form_page: str = "", **headers: str) -> object:
    """POST like a browser: take the CSRF token from the page that holds the form."""
    page = client.get(form_page or url)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.content.decode()).group(1)
    return client.post(url, {**data, "csrfmiddlewaretoken": token}, **headers)


def form_values(row: SummarizerSettings, **changes) -> dict:
    """What the browser submits for a row: every editable field, checkboxes only when on."""
    data = {}
    for spec in SETTINGS_FIELDS:
        value = changes.get(spec.name, getattr(row, spec.name))
        if spec.kind == "bool":
            if value:
                data[spec.name] = "on"
        else:
            data[spec.name] = "" if value is None else str(value)
    return data


def test_every_setting_is_listed_with_default_unit_env_and_help(csrf_client_for):
    body = csrf_client_for.get("/settings/").content.decode()
    for spec in SETTINGS_FIELDS:
        assert f'id="id_{spec.name}"' in body, spec.name  # read-only for non-staff on the defaults
        assert spec.env["agent"] in body
    assert "51200" in body and "(50.0 KB)" in body and "Size limit of the recent section" in body


def test_saving_a_flow_override_writes_history_and_leaves_defaults_alone(csrf_client_for, make_flow):
    flow = make_flow()
    defaults = settings_for(profile="agent")
    response = csrf_post(csrf_client_for, f"/settings/?flow={flow.pk}", {
        "profile": "agent", "flow": flow.pk, "action": "save", **form_values(defaults, last_sec_bytes=20480)})
    assert response.status_code == 302
    override = SummarizerSettings.objects.get(flow=flow, profile="agent")
    assert override.last_sec_bytes == 20480
    assert settings_for(profile="agent").last_sec_bytes == 51200
    change = SettingsChange.objects.filter(settings=override, source="page").get()
    assert change.changes == {"last_sec_bytes": [51200, 20480]}


def test_invalid_values_are_refused_with_field_messages_and_nothing_saved(csrf_client_for, make_flow):
    flow = make_flow()
    defaults = settings_for(profile="agent")
    response = csrf_post(csrf_client_for, f"/settings/?flow={flow.pk}", {
        "profile": "agent", "flow": flow.pk, "action": "save", **form_values(defaults, max_bp_bytes="lots")})
    assert response.status_code == 400 and "expected a whole number" in response.content.decode()
    assert not SummarizerSettings.objects.filter(flow=flow).exists()


def test_only_staff_change_the_defaults(csrf_client_for):
    defaults = settings_for(profile="agent")
    response = csrf_post(csrf_client_for, "/settings/", {"profile": "agent", "action": "save",
                                                 **form_values(defaults, last_sec_bytes=9999)})
    assert response.status_code == 403 and settings_for(profile="agent").last_sec_bytes == 51200


def test_forms_without_a_csrf_token_are_refused(csrf_client_for, make_chain, tool_round):
    chain = make_chain(tool_round)
    assert csrf_client_for.post("/settings/", {"action": "save"}).status_code == 403
    assert csrf_client_for.post(f"/chains/{chain.pk}/compact/", {"instructions": "x"}).status_code == 403


def test_preview_shows_the_other_view_and_saves_nothing(csrf_client_for, make_chain, tool_round):
    big = tool_round[:3] + [{**tool_round[3], "content": "22/tcp open ssh\n" * 2000}] + tool_round[4:]
    chain = make_chain(big + [{"role": "user", "content": "go on"}, {"role": "assistant", "content": "ok"}])
    defaults = settings_for(profile="agent")
    before = (SettingsChange.objects.count(), SummarizerSettings.objects.count())
    response = csrf_post(csrf_client_for, f"/settings/?flow={chain.agent.flow_id}", {
        "profile": "agent", "flow": chain.agent.flow_id, "chain": chain.pk, "action": "preview",
        **form_values(defaults, last_sec_bytes=2048, max_bp_bytes=1024)})
    body = response.content.decode()
    assert response.status_code == 200 and 'id="preview-stats"' in body and "Summarize calls" in body
    assert "summary-mark" in body and "Identifier retention" in body
    assert (SettingsChange.objects.count(), SummarizerSettings.objects.count()) == before
    assert settings_for(profile="agent", flow=chain.agent.flow).last_sec_bytes == 51200


def test_export_gives_an_env_file(csrf_client_for, make_flow):
    response = csrf_client_for.get("/settings/export.env?profile=assistant")
    text = response.content.decode()
    assert response["Content-Disposition"] == 'attachment; filename="pentagi-assistant.env"'
    assert "ASSISTANT_SUMMARIZER_LAST_SEC_BYTES=76800" in text


def test_another_users_flow_cannot_be_a_settings_scope(csrf_client_for, other_user):
    from flows.ingest.create import flow_create

    flow = flow_create(owner=other_user, title="theirs")
    assert csrf_client_for.get(f"/settings/?flow={flow.pk}").status_code == 404


def test_compact_now_queues_a_manual_compaction_with_focus(csrf_client_for, make_chain, tool_round,
                                                         django_capture_on_commit_callbacks, monkeypatch):
    from flows.pipeline import tasks
    queued = []
    monkeypatch.setattr(tasks.compact_chain_task, "delay", lambda *a: queued.append(a))
    chain = make_chain(tool_round)
    with django_capture_on_commit_callbacks(execute=True):
        response = csrf_post(csrf_client_for, f"/chains/{chain.pk}/compact/", {"instructions": "Focus on <creds>"},
                             form_page=f"/chains/{chain.pk}/")
    assert response.status_code == 302 and response["Location"] == f"/chains/{chain.pk}/"
    event = SummaryEvent.objects.get(chain=chain, trigger="manual")
    assert event.instructions == "Focus on <creds>" and queued == [(chain.pk, event.pk)]


def test_compact_now_refuses_overlong_instructions(csrf_client_for, make_chain, tool_round):
    chain = make_chain(tool_round)
    response = csrf_post(csrf_client_for, f"/chains/{chain.pk}/compact/", {"instructions": "x" * 2001},
                         form_page=f"/chains/{chain.pk}/")
    assert response.status_code == 302 and not SummaryEvent.objects.filter(chain=chain).exists()
