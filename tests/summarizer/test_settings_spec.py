"""The one declaration per setting and the one boolean parser (Go's strconv.ParseBool set, as PentAGI)."""
from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from summarizer import SUMMARIZER_SETTINGS, SummarizerConfig, parse_bool
from summarizer.cli import CliError, config_with_overrides
from summarizer.settings.config import ASSISTANT_ENV_PREFIX, env_names
from summarizer.settings.spec import FALSE_WORDS, TRUE_WORDS, parse_int

GO_TRUE = ["1", "t", "T", "TRUE", "true", "True"]
GO_FALSE = ["0", "f", "F", "FALSE", "false", "False"]


@pytest.mark.parametrize("word", GO_TRUE)
def test_it_accepts_exactly_gos_true_spellings(word):
    assert parse_bool(word) is True


@pytest.mark.parametrize("word", GO_FALSE)
def test_it_accepts_exactly_gos_false_spellings(word):
    assert parse_bool(word) is False


@pytest.mark.parametrize("word", ["yes", "no", "on", "off", "y", "n", "tRUE", " true", "true ", "", "2"])
def test_it_refuses_what_go_refuses(word):
    with pytest.raises(ValueError, match="expected true or false"):
        parse_bool(word)


@given(st.text(max_size=6))
def test_from_env_and_the_cli_accept_the_same_booleans(word):
    """One parser: a switch value is accepted by from_env exactly when the Go set holds it (the CLI strips blanks)."""
    accepted = word in TRUE_WORDS | FALSE_WORDS
    if word == "":  # empty means unset for the environment
        return
    try:
        cfg = SummarizerConfig.from_env(environ={"SUMMARIZER_USE_QA": word})
        assert accepted and cfg.use_qa is (word in TRUE_WORDS)
    except ValueError:
        assert not accepted
    stripped = word.strip()
    try:
        cli = config_with_overrides("agent", [f"use_qa={word}"])
        assert stripped in TRUE_WORDS | FALSE_WORDS and cli.use_qa is (stripped in TRUE_WORDS)
    except CliError:
        assert stripped not in TRUE_WORDS | FALSE_WORDS


def test_whole_numbers_only():
    assert parse_int(" 42 ") == 42 and parse_int(-3) == -3 and parse_int(7.0) == 7
    for bad in ("4.5", "64KB", True, 1.5, None, ""):
        with pytest.raises(ValueError, match="whole number"):
            parse_int(bad)


def test_the_profiles_and_env_names_come_from_the_declarations():
    agent, assistant = SummarizerConfig.agent(), SummarizerConfig.assistant()
    for spec in SUMMARIZER_SETTINGS:
        assert getattr(agent, spec.name) == spec.default["agent"]
        assert getattr(assistant, spec.name) == spec.default["assistant"]
    assert env_names() == {spec.name: spec.env["agent"] for spec in SUMMARIZER_SETTINGS}
    assert env_names(ASSISTANT_ENV_PREFIX) == {s.name: s.env["assistant"] for s in SUMMARIZER_SETTINGS
                                               if s.env["assistant"]}


def test_every_engine_field_but_the_reserve_share_is_declared():
    fields = {f.name for f in dataclasses.fields(SummarizerConfig)} - {"last_section_reserve_percent"}
    assert {spec.name for spec in SUMMARIZER_SETTINGS} == fields


def test_the_assistant_forces_its_two_switches_and_has_no_variable_for_them():
    forced = {spec.name: spec.forced["assistant"] for spec in SUMMARIZER_SETTINGS if "assistant" in spec.forced}
    assert forced == {"use_qa": True, "summ_human_in_qa": False}
    assert all(spec.env["assistant"] is None for spec in SUMMARIZER_SETTINGS if spec.name in forced)


def test_clean_applies_the_dashboard_bounds_but_convert_does_not():
    spec = next(s for s in SUMMARIZER_SETTINGS if s.name == "keep_qa_sections")
    assert spec.convert("-5") == -5  # PentAGI's loader: a non-positive size means "default"
    with pytest.raises(ValueError, match="at least 1"):
        spec.clean("-5")
    with pytest.raises(ValueError, match="at most 100"):
        spec.clean("101")
    assert spec.clean(" 7 ") == 7
