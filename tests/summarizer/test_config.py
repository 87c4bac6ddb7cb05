"""SummarizerConfig: PentAGI's profiles, constructor defaulting and environment variables (§2.0, §4)."""
from __future__ import annotations

import dataclasses

import pytest

from summarizer.settings.config import SummarizerConfig, env_names

FIELDS = ("preserve_last", "use_qa", "summ_human_in_qa", "last_sec_bytes", "max_bp_bytes", "max_qa_sections",
          "max_qa_bytes", "keep_qa_sections", "last_section_reserve_percent")


def _values(cfg: SummarizerConfig) -> tuple:
    return tuple(getattr(cfg, f) for f in FIELDS)


def test_the_three_profiles_have_pentagis_defaults():
    assert _values(SummarizerConfig.agent()) == (True, True, False, 51200, 16384, 10, 65536, 1, 25)
    assert _values(SummarizerConfig.assistant()) == (True, True, False, 76800, 16384, 7, 76800, 3, 25)
    assert _values(SummarizerConfig.restore()) == (True, True, True, 16384, 8192, 3, 20480, 1, 25)


def test_the_config_is_frozen_and_replace_returns_a_new_one():
    cfg = SummarizerConfig.agent()
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.last_sec_bytes = 1  # type: ignore[misc]
    smaller = cfg.replace(last_sec_bytes=1000)
    assert smaller.last_sec_bytes == 1000 and cfg.last_sec_bytes == 51200


def test_zero_or_negative_sizes_get_constructor_defaults():
    cfg = SummarizerConfig(last_sec_bytes=0, max_bp_bytes=-1, max_qa_sections=0, max_qa_bytes=0,
                           keep_qa_sections=0)
    assert (cfg.last_sec_bytes, cfg.max_bp_bytes, cfg.max_qa_sections, cfg.max_qa_bytes, cfg.keep_qa_sections) == \
        (51200, 16384, 10, 65536, 1)


def test_switched_off_features_keep_their_zero_sizes():
    cfg = SummarizerConfig(preserve_last=False, use_qa=False, last_sec_bytes=0, max_qa_sections=0, max_qa_bytes=0)
    assert (cfg.last_sec_bytes, cfg.max_qa_sections, cfg.max_qa_bytes) == (0, 0, 0)
    assert cfg.max_bp_bytes == 16384 and cfg.keep_qa_sections == 1  # always defaulted


def test_a_zero_reserve_means_no_reserve():
    """Resolution 1."""
    assert SummarizerConfig(last_section_reserve_percent=0).last_section_reserve_percent == 0
    with pytest.raises(ValueError):
        SummarizerConfig(last_section_reserve_percent=101)


def test_wrong_types_are_rejected():
    with pytest.raises(TypeError):
        SummarizerConfig(last_sec_bytes="100")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        SummarizerConfig(use_qa=1)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        SummarizerConfig(max_bp_bytes=True)


def test_agent_env_names_follow_pentagi():
    assert env_names() == {
        "preserve_last": "SUMMARIZER_PRESERVE_LAST", "use_qa": "SUMMARIZER_USE_QA",
        "summ_human_in_qa": "SUMMARIZER_SUM_MSG_HUMAN_IN_QA", "last_sec_bytes": "SUMMARIZER_LAST_SEC_BYTES",
        "max_bp_bytes": "SUMMARIZER_MAX_BP_BYTES", "max_qa_sections": "SUMMARIZER_MAX_QA_SECTIONS",
        "max_qa_bytes": "SUMMARIZER_MAX_QA_BYTES", "keep_qa_sections": "SUMMARIZER_KEEP_QA_SECTIONS"}
    assert "ASSISTANT_SUMMARIZER_USE_QA" not in env_names("ASSISTANT_SUMMARIZER_").values()


def test_from_env_reads_agent_variables_and_treats_empty_as_unset():
    env = {"SUMMARIZER_PRESERVE_LAST": "false", "SUMMARIZER_USE_QA": "", "SUMMARIZER_LAST_SEC_BYTES": "1000",
           "SUMMARIZER_SUM_MSG_HUMAN_IN_QA": "1", "SUMMARIZER_KEEP_QA_SECTIONS": "2"}
    cfg = SummarizerConfig.from_env(environ=env)
    assert (cfg.preserve_last, cfg.use_qa, cfg.summ_human_in_qa, cfg.last_sec_bytes, cfg.keep_qa_sections) == \
        (False, True, True, 1000, 2)
    assert SummarizerConfig.from_env(environ={}) == SummarizerConfig.agent()


def test_from_env_for_the_assistant_forces_qa_on_and_human_summaries_off():
    env = {"ASSISTANT_SUMMARIZER_LAST_SEC_BYTES": "2048", "ASSISTANT_SUMMARIZER_USE_QA": "false",
           "ASSISTANT_SUMMARIZER_SUM_MSG_HUMAN_IN_QA": "true", "SUMMARIZER_MAX_QA_SECTIONS": "99"}
    cfg = SummarizerConfig.from_env("ASSISTANT_SUMMARIZER_", environ=env)
    assert cfg.last_sec_bytes == 2048 and cfg.use_qa is True and cfg.summ_human_in_qa is False
    assert cfg.max_qa_sections == 7 and cfg.keep_qa_sections == 3
    assert SummarizerConfig.from_env("ASSISTANT_SUMMARIZER_", environ={}) == SummarizerConfig.assistant()


def test_from_env_negative_numbers_fall_back_to_defaults():
    cfg = SummarizerConfig.from_env(environ={"SUMMARIZER_MAX_BP_BYTES": "-5"})
    assert cfg.max_bp_bytes == 16384


def test_from_env_rejects_unparsable_values_naming_the_variable():
    with pytest.raises(ValueError, match="SUMMARIZER_USE_QA"):
        SummarizerConfig.from_env(environ={"SUMMARIZER_USE_QA": "yes"})
    with pytest.raises(ValueError, match="SUMMARIZER_MAX_QA_BYTES"):
        SummarizerConfig.from_env(environ={"SUMMARIZER_MAX_QA_BYTES": "64KB"})


def test_from_env_reads_the_process_environment_by_default(monkeypatch):
    monkeypatch.setenv("SUMMARIZER_MAX_QA_SECTIONS", "4")
    assert SummarizerConfig.from_env().max_qa_sections == 4
