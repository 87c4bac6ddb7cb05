"""Every consumer of a setting derives from its one declaration: model fields, admin form, the engine config."""
from __future__ import annotations

import pytest
from django.core.validators import MaxValueValidator, MinValueValidator

from flows.config import defaults_for, settings_for, summarizer_config_for
from flows.core import PROFILES, SETTINGS_FIELDS
from flows.models import SummarizerSettings
from flows.pages import SummarizerSettingsForm
from summarizer import SUMMARIZER_SETTINGS, SummarizerConfig
from summarizer.settings.config import ASSISTANT_ENV_PREFIX

pytestmark = pytest.mark.django_db


def _bounds(field) -> tuple[int | None, int | None]:
    low = next((v.limit_value for v in field.validators if isinstance(v, MinValueValidator)), None)
    high = next((v.limit_value for v in field.validators if isinstance(v, MaxValueValidator)), None)
    return low, high


@pytest.mark.parametrize("spec", SETTINGS_FIELDS, ids=lambda s: s.name)
def test_the_model_field_carries_the_declared_default_bounds_and_help(spec):
    field = SummarizerSettings._meta.get_field(spec.name)
    if spec.default["agent"] is None:
        assert field.null
    else:
        assert field.default == spec.default["agent"]
    if spec.kind in ("int", "optional_int"):
        low = spec.minimum if spec.minimum is not None else 0  # a positive integer column starts at 0 anyway
        assert _bounds(field) == (low, spec.maximum)
    assert str(field.help_text).startswith(spec.help)
    assert all(name in field.help_text for name in spec.env.values() if name)
    if spec.kind == "choice":
        assert [value for value, _label in field.choices] == list(spec.choices)


def test_every_declaration_covers_both_profiles():
    assert all(tuple(s.env) == tuple(s.default) == PROFILES for s in SETTINGS_FIELDS)


def test_the_engine_profiles_equal_the_registry_defaults():
    for profile, config in (("agent", SummarizerConfig.agent()), ("assistant", SummarizerConfig.assistant())):
        defaults = defaults_for(profile)
        assert all(getattr(config, spec.name) == defaults[spec.name] for spec in SUMMARIZER_SETTINGS)


def test_a_row_seeded_from_the_environment_gives_the_config_from_env_reads(monkeypatch):
    env = {"SUMMARIZER_LAST_SEC_BYTES": "30000", "SUMMARIZER_USE_QA": "F", "SUMMARIZER_KEEP_QA_SECTIONS": "2",
           "ASSISTANT_SUMMARIZER_MAX_QA_SECTIONS": "5", "ASSISTANT_SUMMARIZER_PRESERVE_LAST": "0"}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert summarizer_config_for(settings_for(profile="agent")) == SummarizerConfig.from_env(environ=env)
    assert summarizer_config_for(settings_for(profile="assistant")) == \
        SummarizerConfig.from_env(ASSISTANT_ENV_PREFIX, environ=env)


def test_the_admin_form_names_the_rows_own_variables():
    form = SummarizerSettingsForm(instance=settings_for(profile="assistant"))
    assert "ASSISTANT_SUMMARIZER_LAST_SEC_BYTES" in form.fields["last_sec_bytes"].help_text
    assert "(SUMMARIZER_" not in form.fields["last_sec_bytes"].help_text
    assert "ASSISTANT_COMPACTION_RESERVE_TOKENS" in form.fields["reserve_tokens"].help_text
    assert form.fields["use_qa"].disabled and form.fields["summ_human_in_qa"].disabled
