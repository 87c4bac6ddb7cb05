"""Which PentAGI agent a system prompt belongs to, told from its markdown title (pure)."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flows.gateway.agent_roles import ROLE_RULES, agent_type_from_title, prompt_title, recognise_agent_type
from flows.models import AGENT_TYPES

# Titles in PentAGI's style (an upper-case role title over the prompt), worded by us.
TITLES = {
    "primary_agent": "CREW ORCHESTRATION LEAD",
    "pentester": "SENIOR PENETRATION TESTING EXPERT",
    "coder": "SOFTWARE DEVELOPMENT SPECIALIST",
    "installer": "INFRASTRUCTURE SETUP SPECIALIST",
    "searcher": "WEB INFORMATION RETRIEVAL AGENT",
    "memorist": "VECTOR MEMORY KEEPER",
    "adviser": "STRATEGIC SOLUTION EXPERT",
    "reflector": "STRUCTURED OUTPUT ENFORCER",
    "enricher": "QUESTION ENRICHMENT HELPER",
    "reporter": "FINAL RESULT REPORTER",
    "generator": "SUBTASK LIST GENERATOR",
    "refiner": "SUBTASK PLAN OPTIMIZER FOR THE TEAM",
    "assistant": "PENETRATION TESTING ASSISTANT FOR USERS",
    "summarizer": "CONTENT SUMMARIZATION UNIT",
    "tool_call_fixer": "JSON ARGUMENT REPAIR UNIT",
}


def _prompt(title: str, body: str = "You work inside an authorized engagement.") -> list[dict[str, object]]:
    return [{"role": "system", "content": f"# {title}\n\n{body}\n\n## TOOLS\n..."},
            {"role": "user", "content": "the task"}]


def test_every_pentagi_agent_type_is_known_and_has_a_rule() -> None:
    assert len(AGENT_TYPES) == 15 and set(TITLES) == set(AGENT_TYPES)
    assert {agent_type for agent_type, _stems in ROLE_RULES} == set(AGENT_TYPES)


@pytest.mark.parametrize("agent_type", sorted(TITLES))
def test_each_agent_is_recognised_from_its_prompts_title(agent_type: str) -> None:
    assert recognise_agent_type(_prompt(TITLES[agent_type])) == agent_type


def test_a_title_naming_penetration_testing_in_another_role_is_that_role() -> None:
    assert agent_type_from_title("PENETRATION TESTING ASSISTANT") == "assistant"
    assert agent_type_from_title("ORCHESTRATOR OF A PENETRATION TESTING COMPANY") == "primary_agent"


def test_only_the_title_counts_not_the_prompts_body() -> None:
    body = "You orchestrate, search, code and repair; you are an assistant."
    assert recognise_agent_type(_prompt("NIGHT SHIFT HELPER", body)) is None
    assert recognise_agent_type([{"role": "system", "content": body}]) is None


def test_the_title_is_read_from_the_first_system_message_only() -> None:
    messages = [{"role": "user", "content": "# CODE DEVELOPMENT"}, {"role": "system", "content": "# CODE"}]
    assert prompt_title(messages) == ""
    parts = [{"role": "system", "content": [{"type": "text", "text": "  # INFRASTRUCTURE CARE\nrest"}]}]
    assert prompt_title(parts) == "INFRASTRUCTURE CARE" and recognise_agent_type(parts) == "installer"


@given(st.lists(st.fixed_dictionaries({"role": st.sampled_from(["system", "user", "developer"]),
                                       "content": st.one_of(st.text(), st.none(), st.lists(st.text()))}),
                max_size=3))
def test_any_request_is_some_known_type_or_none(messages: list[dict[str, object]]) -> None:
    assert recognise_agent_type(messages) in [*AGENT_TYPES, None]
