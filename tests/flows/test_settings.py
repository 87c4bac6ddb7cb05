"""The settings registry: defaults equal the product table, env import/export, validation, history."""
from __future__ import annotations

import pytest

from flows.config import (
    SettingsError,
    defaults_for,
    parse_env_text,
    settings_env_export,
    settings_for,
    settings_import_env,
    settings_save,
    settings_update,
    settings_validate,
    settings_values,
    summarizer_config_for,
)
from flows.core import FIELDS_BY_NAME, SETTINGS_FIELDS
from flows.models import SettingsChange, SummarizerSettings

pytestmark = pytest.mark.django_db

# PentAGI's published defaults, USE_QA and SUM_MSG_HUMAN_IN_QA included (docs/settings.md, first table)
PRODUCT_TABLE = {
    "agent": {"SUMMARIZER_PRESERVE_LAST": True, "SUMMARIZER_LAST_SEC_BYTES": 51200, "SUMMARIZER_MAX_BP_BYTES": 16384,
              "SUMMARIZER_MAX_QA_SECTIONS": 10, "SUMMARIZER_MAX_QA_BYTES": 65536, "SUMMARIZER_KEEP_QA_SECTIONS": 1,
              "SUMMARIZER_USE_QA": True, "SUMMARIZER_SUM_MSG_HUMAN_IN_QA": False},
    "assistant": {"ASSISTANT_SUMMARIZER_PRESERVE_LAST": True, "ASSISTANT_SUMMARIZER_LAST_SEC_BYTES": 76800,
                  "ASSISTANT_SUMMARIZER_MAX_BP_BYTES": 16384, "ASSISTANT_SUMMARIZER_MAX_QA_SECTIONS": 7,
                  "ASSISTANT_SUMMARIZER_MAX_QA_BYTES": 76800, "ASSISTANT_SUMMARIZER_KEEP_QA_SECTIONS": 3},
}


@pytest.mark.parametrize("profile", ["agent", "assistant"])
def test_defaults_equal_the_product_table_exactly(profile, monkeypatch):
    for name in PRODUCT_TABLE["agent"] | PRODUCT_TABLE["assistant"]:
        monkeypatch.delenv(name, raising=False)
    row = settings_for(profile=profile)
    by_env = {f.env[profile]: getattr(row, f.name) for f in SETTINGS_FIELDS if f.env[profile]}
    assert {k: by_env[k] for k in PRODUCT_TABLE[profile]} == PRODUCT_TABLE[profile]


def test_the_assistant_always_uses_qa_and_never_summarizes_the_user():
    assert FIELDS_BY_NAME["use_qa"].env["assistant"] is None
    assert not FIELDS_BY_NAME["summ_human_in_qa"].editable("assistant")
    row = settings_for(profile="assistant")
    SummarizerSettings.objects.filter(pk=row.pk).update(use_qa=False, summ_human_in_qa=True)
    row.refresh_from_db()
    config = summarizer_config_for(row)
    assert (config.use_qa, config.summ_human_in_qa, config.last_sec_bytes) == (True, False, 76800)
    with pytest.raises(SettingsError) as info:
        settings_validate({"use_qa": False}, base=row)
    assert "use_qa" in info.value.errors


def test_every_model_setting_has_metadata_with_help():
    model_fields = {f.name for f in SummarizerSettings._meta.get_fields()} - {
        "id", "profile", "flow", "updated_at", "updated_by", "changes"}
    assert {f.name for f in SETTINGS_FIELDS} == model_fields
    assert all(f.help for f in SETTINGS_FIELDS)


def test_first_use_takes_values_from_the_environment_and_empty_means_unset(monkeypatch):
    monkeypatch.setenv("SUMMARIZER_LAST_SEC_BYTES", "40000")
    monkeypatch.setenv("SUMMARIZER_MAX_QA_SECTIONS", "")
    monkeypatch.setenv("COMPACTION_KEEP_RECENT_TOKENS", "8000")
    row = settings_for(profile="agent")
    assert (row.last_sec_bytes, row.max_qa_sections, row.keep_recent_tokens) == (40000, 10, 8000)
    monkeypatch.setenv("SUMMARIZER_LAST_SEC_BYTES", "30000")
    assert settings_for(profile="agent").last_sec_bytes == 40000  # only on first use


def test_a_broken_environment_value_falls_back_to_the_default(monkeypatch):
    monkeypatch.setenv("SUMMARIZER_MAX_BP_BYTES", "lots")
    assert settings_for(profile="agent").max_bp_bytes == 16384


def test_a_flow_override_wins_over_the_defaults(make_flow):
    flow = make_flow()
    SummarizerSettings.objects.create(profile="agent", flow=flow, last_sec_bytes=20000)
    assert settings_for(profile="agent", flow=flow).last_sec_bytes == 20000
    assert settings_for(profile="agent", flow=make_flow()).last_sec_bytes == 51200


@pytest.mark.parametrize("data, field", [
    ({"last_sec_bytes": 0}, "last_sec_bytes"),
    ({"last_sec_bytes": -5}, "last_sec_bytes"),
    ({"last_sec_bytes": "big"}, "last_sec_bytes"),
    ({"last_sec_bytes": True}, "last_sec_bytes"),
    ({"max_bp_bytes": 10}, "max_bp_bytes"),
    ({"keep_qa_sections": 11}, "keep_qa_sections"),
    ({"max_active_transcript_bytes": 100000}, "max_active_transcript_bytes"),
    ({"identifier_policy": "custom"}, "identifier_instructions"),
    ({"identifier_policy": "loose"}, "identifier_policy"),
    ({"preserve_last": "maybe"}, "preserve_last"),
    ({"preserve_last": "yes"}, "preserve_last"),  # Go's strconv.ParseBool set, as PentAGI
    ({"no_such_setting": 1}, "no_such_setting"),
])
def test_validation_names_the_field(data, field):
    with pytest.raises(SettingsError) as info:
        settings_validate(data, profile="agent")
    assert field in info.value.errors


def test_validation_coerces_and_accepts_consistent_changes():
    cleaned = settings_validate({"last_sec_bytes": "30000", "preserve_last": "false", "reserve_tokens": "",
                                 "max_active_transcript_bytes": 1000, "truncate_after_compaction": True})
    assert cleaned == {"last_sec_bytes": 30000, "preserve_last": False, "reserve_tokens": None,
                       "max_active_transcript_bytes": 1000, "truncate_after_compaction": True}


def test_updates_record_who_changed_what(user):
    row = settings_for(profile="agent")
    change = settings_update(row=row, data={"last_sec_bytes": 40000, "max_bp_bytes": 16384}, user=user, source="api")
    assert change.changes == {"last_sec_bytes": [51200, 40000]}
    assert (change.user, change.source, change.settings) == (user, "api", row)
    assert settings_update(row=row, data={"last_sec_bytes": 40000}, user=user) is None  # no change, no entry
    assert SettingsChange.objects.count() == 1


def test_an_invalid_update_saves_nothing(user):
    row = settings_for(profile="agent")
    with pytest.raises(SettingsError):
        settings_update(row=row, data={"last_sec_bytes": 40000, "keep_qa_sections": 50}, user=user)
    row.refresh_from_db()
    assert row.last_sec_bytes == 51200 and not SettingsChange.objects.exists()


def test_saving_a_flows_settings_creates_its_override_and_leaves_the_defaults_alone(user, make_flow):
    flow = make_flow()
    row, change = settings_save(profile="agent", flow=flow, data={"last_sec_bytes": "30000"}, user=user, source="page")
    assert (row.flow, row.last_sec_bytes, change.changes) == (flow, 30000, {"last_sec_bytes": [51200, 30000]})
    assert settings_for(profile="agent").last_sec_bytes == 51200


def test_a_refused_save_leaves_no_override_row_behind(user, make_flow):
    flow = make_flow()
    with pytest.raises(SettingsError):
        settings_save(profile="agent", flow=flow, data={"keep_qa_sections": 50}, user=user, source="api")
    assert not SummarizerSettings.objects.filter(flow=flow).exists() and not SettingsChange.objects.exists()


@pytest.mark.parametrize("profile, data", [
    ("agent", {"last_sec_bytes": 30000, "use_qa": False, "identifier_policy": "custom",
               "identifier_instructions": 'Keep "hosts" # and ports\nverbatim', "reserve_tokens": 4000}),
    ("assistant", {"max_qa_sections": 5, "preserve_last": False, "prune_tools_deny": "read, grep*"}),
])
def test_env_export_and_import_round_trip(user, profile, data):
    row = settings_for(profile=profile)
    settings_update(row=row, data=data, user=user)
    text = settings_env_export(row)
    prefix = "ASSISTANT_SUMMARIZER_" if profile == "assistant" else "SUMMARIZER_"
    assert f"{prefix}LAST_SEC_BYTES=" in text and "COMPACTION_KEEP_RECENT_TOKENS=20000" in text
    assert "ASSISTANT_SUMMARIZER_USE_QA" not in text  # fixed for the assistant: no variable
    exported = settings_values(row)
    SummarizerSettings.objects.all().delete()
    settings_import_env(parse_env_text(text), user=user)
    assert settings_values(settings_for(profile=profile)) == exported


def test_env_import_keeps_the_good_variables_and_names_each_bad_one():
    report = settings_import_env({"SUMMARIZER_LAST_SEC_BYTES": "40000", "ASSISTANT_SUMMARIZER_KEEP_QA_SECTIONS": "x"})
    assert list(report.rejected) == ["ASSISTANT_SUMMARIZER_KEEP_QA_SECTIONS"]
    assert settings_for(profile="agent").last_sec_bytes == 40000
    assert settings_for(profile="assistant").keep_qa_sections == 3


def test_defaults_for_each_profile_pass_their_own_validation():
    for profile in ("agent", "assistant"):
        assert settings_validate(defaults_for(profile), profile=profile) == defaults_for(profile)
