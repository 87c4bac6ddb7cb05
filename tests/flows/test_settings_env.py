"""Environment import per variable (issue 13 item 4) and `.env` export that defines each variable once with each
profile's own names (issue 12 item 9)."""
from __future__ import annotations

import re

import pytest
from django.test import Client

from flows.config import (
    parse_env_text,
    settings_env_export,
    settings_env_export_rows,
    settings_for,
    settings_import_env,
    settings_save,
    settings_values,
)
from flows.core import SETTINGS_FIELDS
from flows.models import SettingsChange, SummarizerSettings

pytestmark = pytest.mark.django_db

ISSUE_CASE = {"SUMMARIZER_KEEP_QA_SECTIONS": "12", "SUMMARIZER_LAST_SEC_BYTES": "30000"}


def _assignments(text: str) -> list[str]:
    return [line.split("=", 1)[0] for line in text.splitlines() if "=" in line and not line.startswith("#")]


def test_it_keeps_the_valid_variable_and_names_the_one_above_max_qa_sections():
    report = settings_import_env(ISSUE_CASE)
    row = settings_for(profile="agent")
    assert (row.last_sec_bytes, row.keep_qa_sections) == (30000, 1)
    assert list(report.rejected) == ["SUMMARIZER_KEEP_QA_SECTIONS"]
    assert "SUMMARIZER_KEEP_QA_SECTIONS='12'" in report.rejected["SUMMARIZER_KEEP_QA_SECTIONS"]
    assert "cannot exceed" in report.rejected["SUMMARIZER_KEEP_QA_SECTIONS"]
    assert report.applied["agent"] == {"last_sec_bytes": [51200, 30000]}
    assert SettingsChange.objects.filter(source="env import").count() == 1


def test_variables_valid_only_together_are_accepted_in_any_order():
    report = settings_import_env({"COMPACTION_MAX_ACTIVE_TRANSCRIPT_BYTES": "100000",
                                  "COMPACTION_TRUNCATE_AFTER_COMPACTION": "true",
                                  "SUMMARIZER_KEEP_QA_SECTIONS": "12", "SUMMARIZER_MAX_QA_SECTIONS": "20"})
    assert report.rejected == {}
    row = settings_for(profile="agent")
    assert (row.max_active_transcript_bytes, row.truncate_after_compaction) == (100000, True)
    assert (row.keep_qa_sections, row.max_qa_sections) == (12, 20)


def test_booleans_follow_gos_parsebool_and_bad_ones_are_named():
    report = settings_import_env({"SUMMARIZER_USE_QA": "yes", "SUMMARIZER_PRESERVE_LAST": "F"})
    assert list(report.rejected) == ["SUMMARIZER_USE_QA"]
    row = settings_for(profile="agent")
    assert (row.use_qa, row.preserve_last) == (True, False)


def test_the_assistant_reads_its_own_compaction_variables_then_the_shared_ones():
    settings_import_env({"COMPACTION_KEEP_RECENT_TOKENS": "8000", "COMPACTION_RESERVE_TOKENS": "3000",
                         "ASSISTANT_COMPACTION_RESERVE_TOKENS": "6000"})
    agent, assistant = settings_for(profile="agent"), settings_for(profile="assistant")
    assert (agent.keep_recent_tokens, agent.reserve_tokens) == (8000, 3000)
    assert (assistant.keep_recent_tokens, assistant.reserve_tokens) == (8000, 6000)


def test_first_use_seeds_the_good_variables_and_skips_the_bad_ones(monkeypatch):
    for name, value in ISSUE_CASE.items():
        monkeypatch.setenv(name, value)
    row = settings_for(profile="agent")
    assert (row.last_sec_bytes, row.keep_qa_sections) == (30000, 1)


def test_compaction_notices_are_on_by_default():
    for profile in ("agent", "assistant"):
        assert settings_for(profile=profile).notify_user is True


def test_the_assistant_export_uses_only_the_assistants_names():
    text = settings_env_export(settings_for(profile="assistant"))
    names = _assignments(text)
    assert names and all(n.startswith(("ASSISTANT_SUMMARIZER_", "ASSISTANT_COMPACTION_", "ASSISTANT_GATEWAY_"))
                         for n in names)
    assert "ASSISTANT_GATEWAY_LOOP_REPEATS=3" in text.splitlines()
    assert "ASSISTANT_GATEWAY_MODE=manage" in text.splitlines()
    assert "ASSISTANT_COMPACTION_KEEP_RECENT_TOKENS=20000" in text.splitlines()
    assert not re.search(r"(?<!ASSISTANT_)\bSUMMARIZER_", text)  # comments name no agent variable either
    assert "use_qa is fixed to true for the assistant" in text


def test_several_rows_export_each_variable_once_with_other_rows_commented(user, make_flow):
    flow_a, flow_b = make_flow(), make_flow()
    settings_save(profile="agent", flow=flow_a, data={"last_sec_bytes": 20000}, user=user, source="api")
    settings_save(profile="agent", flow=flow_b, data={"last_sec_bytes": 10000}, user=user, source="api")
    rows = [settings_for(profile="agent", flow=flow_b), settings_for(profile="agent", flow=flow_a),
            settings_for(profile="agent"), settings_for(profile="assistant")]
    text = settings_env_export_rows(rows)
    names = _assignments(text)
    assert len(names) == len(set(names))
    expected = {s.env[p] for s in SETTINGS_FIELDS for p in ("agent", "assistant") if s.env[p]}
    assert set(names) == expected
    parsed = parse_env_text(text)
    assert parsed["SUMMARIZER_LAST_SEC_BYTES"] == "51200"  # the defaults are the active agent section
    assert f"override for flow #{flow_a.pk}" in text and "# SUMMARIZER_LAST_SEC_BYTES=20000" in text
    assert "# SUMMARIZER_LAST_SEC_BYTES=10000" in text


def test_without_the_defaults_the_lowest_flow_is_the_active_section(user, make_flow):
    flow_a, flow_b = make_flow(), make_flow()
    settings_save(profile="agent", flow=flow_a, data={"last_sec_bytes": 20000}, user=user, source="api")
    settings_save(profile="agent", flow=flow_b, data={"last_sec_bytes": 10000}, user=user, source="api")
    text = settings_env_export_rows(SummarizerSettings.objects.filter(flow__isnull=False))
    assert parse_env_text(text)["SUMMARIZER_LAST_SEC_BYTES"] == "20000"


def test_a_multi_row_export_imports_back_to_the_active_sections(user):
    settings_save(profile="assistant", flow=None, data={"max_qa_sections": 5, "reserve_tokens": 1234}, user=user,
                  source="api")
    rows = [settings_for(profile="agent"), settings_for(profile="assistant")]
    exported = {row.profile: settings_values(row) for row in rows}
    text = settings_env_export_rows(rows)
    SummarizerSettings.objects.all().delete()
    assert settings_import_env(parse_env_text(text)).rejected == {}
    for profile, values in exported.items():
        assert settings_values(settings_for(profile=profile)) == values


# ------------------------------------------------------------------------------------------- page and admin

def _flash(response) -> list[str]:
    return [str(m) for m in response.context["messages"]] if response.context else []


def test_the_settings_page_imports_and_names_each_refused_variable(staff_client_for):
    text = "SUMMARIZER_KEEP_QA_SECTIONS=12\nSUMMARIZER_LAST_SEC_BYTES=30000\n"
    response = staff_client_for.post("/settings/import-env/", {"text": text}, follow=True)
    assert response.status_code == 200
    body = response.content.decode()
    assert "Imported 1 setting(s)" in body and "Refused SUMMARIZER_KEEP_QA_SECTIONS=&#x27;12&#x27;" in body
    assert settings_for(profile="agent").last_sec_bytes == 30000


def test_the_settings_page_takes_an_uploaded_file(staff_client_for, tmp_path):
    path = tmp_path / "pentagi.env"
    path.write_text("export ASSISTANT_SUMMARIZER_KEEP_QA_SECTIONS=2\n", encoding="utf-8")
    with path.open("rb") as handle:
        staff_client_for.post("/settings/import-env/", {"file": handle})
    assert settings_for(profile="assistant").keep_qa_sections == 2


def test_only_staff_import_into_the_defaults(user):
    client = Client()
    client.force_login(user)
    assert client.post("/settings/import-env/", {"text": "SUMMARIZER_LAST_SEC_BYTES=30000"}).status_code == 403
    assert settings_for(profile="agent").last_sec_bytes == 51200


@pytest.mark.parametrize("data", [{"text": ""}, {"text": "# only a comment"}, {"text": "A=\x00"}])
def test_an_empty_or_broken_import_changes_nothing(staff_client_for, data):
    response = staff_client_for.post("/settings/import-env/", data, follow=True)
    assert "Nothing imported" in response.content.decode()
    assert not SettingsChange.objects.filter(source="env import").exists()


def test_the_admin_imports_and_names_each_refused_variable(admin_client):
    page = admin_client.get("/admin/flows/summarizersettings/")
    assert "/admin/flows/summarizersettings/import-env/" in page.content.decode()
    response = admin_client.post("/admin/flows/summarizersettings/import-env/",
                                 {"text": "\n".join(f"{k}={v}" for k, v in ISSUE_CASE.items())}, follow=True)
    flashed = _flash(response)
    assert any("Imported 1 setting(s)" in m for m in flashed)
    assert any(m.startswith("Refused SUMMARIZER_KEEP_QA_SECTIONS='12'") for m in flashed)
    assert settings_for(profile="agent").last_sec_bytes == 30000


def test_the_admin_export_of_several_rows_defines_each_variable_once(admin_client, user, make_flow):
    flow = make_flow()
    settings_save(profile="agent", flow=flow, data={"last_sec_bytes": 20000}, user=user, source="api")
    rows = [settings_for(profile="agent"), settings_for(profile="assistant"), settings_for(profile="agent", flow=flow)]
    response = admin_client.post("/admin/flows/summarizersettings/",
                                 {"action": "export_env", "_selected_action": [r.pk for r in rows]})
    names = _assignments(response.content.decode())
    assert len(names) == len(set(names)) and "SUMMARIZER_LAST_SEC_BYTES" in names


def test_the_summary_fallback_and_the_call_bound_are_validated_imported_and_exported():
    from flows.config import SettingsError, settings_validate

    for bad in ({"summary_fallback": "sometimes"}, {"summary_max_calls": -1}, {"summary_deadline_seconds": 3601}):
        with pytest.raises(SettingsError) as raised:
            settings_validate(bad)
        assert set(raised.value.errors) == set(bad)
    assert settings_validate({"summary_fallback": "fail"}) == {"summary_fallback": "fail"}
    report = settings_import_env({"GATEWAY_SUMMARY_FALLBACK": "fail", "GATEWAY_SUMMARY_MAX_CALLS": "8",
                                  "ASSISTANT_GATEWAY_SUMMARY_DEADLINE_SECONDS": "15",
                                  "GATEWAY_SUMMARY_DEADLINE_SECONDS": "soon"})
    assert list(report.rejected) == ["GATEWAY_SUMMARY_DEADLINE_SECONDS"]
    agent, assistant = settings_for(profile="agent"), settings_for(profile="assistant")
    assert (agent.summary_fallback, agent.summary_max_calls, agent.summary_deadline_seconds) == ("fail", 8, 60)
    assert (assistant.summary_fallback, assistant.summary_deadline_seconds) == ("fail", 15)  # GATEWAY_* shared
    lines = settings_env_export(agent).splitlines()
    assert "GATEWAY_SUMMARY_FALLBACK=fail" in lines and "GATEWAY_SUMMARY_MAX_CALLS=8" in lines
