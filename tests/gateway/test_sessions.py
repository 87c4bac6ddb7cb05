"""Sessions at the gateway (database): one flow per owner and session, one agent per agent type within it."""
from __future__ import annotations

from typing import Any

import pytest
from django.test import RequestFactory

from flows.gateway.sessions import call_headers, call_identity, session_of
from flows.gateway.threads import gateway_thread
from flows.gateway.wire import GatewayError
from flows.models import Agent, Chain, Flow, Message, SummaryEvent

pytestmark = pytest.mark.django_db


def _run(title: str, task: str) -> list[dict[str, Any]]:
    return [{"role": "system", "content": f"# {title}\n\nYou are one of the team's agents."},
            {"role": "user", "content": task}]


PRIMARY = _run("CREW ORCHESTRATION LEAD", "audit 10.0.0.5")
PENTESTER = _run("SENIOR PENETRATION TESTING EXPERT", "scan 10.0.0.5 for open ports")
SEARCHER = _run("WEB INFORMATION RETRIEVAL AGENT", "find CVEs for OpenSSH 8.2")


@pytest.fixture
def user(django_user_model: Any) -> Any:
    return django_user_model.objects.create_user("sess-user", password="x")


def _call(user: Any, messages: list[dict[str, Any]], **headers: str) -> Any:
    identity = call_identity(headers, messages)
    return gateway_thread(user=user, messages=messages, agent_type=identity.agent_type, session=identity.session)


def test_a_pentagi_shaped_run_in_one_session_is_one_flow_with_three_agents(user: Any) -> None:
    chains = [_call(user, m, **{"X-Session-Id": "run-1"}).chain for m in (PRIMARY, PENTESTER, SEARCHER)]
    assert len({c.agent.flow_id for c in chains}) == 1 and Flow.objects.count() == 1
    flow = Flow.objects.get()
    assert flow.session_id == "run-1" and flow.title == "audit 10.0.0.5"
    assert sorted(flow.agents.values_list("agent_type", flat=True)) == ["pentester", "primary_agent", "searcher"]
    again = _call(user, PRIMARY + [{"role": "assistant", "content": "delegating"}], **{"X-Session-Id": "run-1"})
    assert again.chain.pk == chains[0].pk and again.appended == 1


def test_without_a_session_each_new_conversation_is_its_own_flow(user: Any) -> None:
    for messages in (PRIMARY, PENTESTER, SEARCHER):
        _call(user, messages)
    assert Flow.objects.count() == 3 and not Flow.objects.exclude(session_id="").exists()


def test_every_session_header_convention_names_the_session(user: Any) -> None:
    for header in ("X-Session-Id", "Helicone-Session-Id", "x-litellm-session-id", "Langfuse-Session-Id"):
        _call(user, PRIMARY, **{header: f"run-{header}"})
        _call(user, PENTESTER, **{header: f"run-{header}"})
    assert Flow.objects.count() == 4 and all(f.agents.count() == 2 for f in Flow.objects.all())


def test_an_agent_type_header_wins_over_the_prompt(user: Any) -> None:
    result = _call(user, PENTESTER, **{"X-Session-Id": "s", "X-Agent-Type": "Coder"})
    assert result.chain.agent.agent_type == "coder"


def test_a_prompt_nobody_recognises_is_the_primary_agent(user: Any) -> None:
    assert _call(user, _run("NIGHT SHIFT HELPER", "x"), **{"X-Session-Id": "s"}).chain.agent.agent_type == \
        "primary_agent"


def test_a_new_conversation_of_an_agent_continues_that_agent_in_a_successor_chain(user: Any) -> None:
    first = _call(user, PENTESTER, **{"X-Session-Id": "s"})
    second = _call(user, _run("SENIOR PENETRATION TESTING EXPERT", "now try the web server"),
                   **{"X-Session-Id": "s"})
    assert second.chain.agent_id == first.chain.agent_id and second.chain.parent_id == first.chain.pk
    assert Agent.objects.count() == 1 and not Chain.objects.get(pk=first.chain.pk).is_active
    assert "started a new conversation" in SummaryEvent.objects.get(chain=second.chain).reason


def test_a_session_id_never_crosses_users(user: Any, django_user_model: Any) -> None:
    other = django_user_model.objects.create_user("sess-other", password="x")
    mine = _call(user, PRIMARY, **{"X-Session-Id": "shared"})
    theirs = _call(other, PRIMARY, **{"X-Session-Id": "shared"})
    assert mine.chain.agent.flow_id != theirs.chain.agent.flow_id
    assert mine.chain.pk != theirs.chain.pk and theirs.appended == 2
    assert {f.owner_id for f in Flow.objects.filter(session_id="shared")} == {user.pk, other.pk}


def test_another_sessions_chain_is_never_continued(user: Any) -> None:
    first = _call(user, PRIMARY, **{"X-Session-Id": "a"})
    second = _call(user, PRIMARY, **{"X-Session-Id": "b"})
    plain = _call(user, PRIMARY)
    assert len({r.chain.agent.flow_id for r in (first, second, plain)}) == 3
    assert second.appended == plain.appended == 2


@pytest.mark.parametrize("value", ["x" * 10_000, "run\x00one", "run\none", "tab\there", "\x1b[31m"])
def test_a_session_id_too_long_or_with_control_characters_is_a_400(user: Any, value: str) -> None:
    with pytest.raises(GatewayError) as caught:
        session_of({"X-Session-Id": value})
    assert caught.value.status == 400 and caught.value.code == "invalid_session_id"
    assert not Message.objects.exists()


def test_the_url_form_is_the_session_header() -> None:
    request = RequestFactory().post("/s/run%20seven/v1/chat/completions", HTTP_X_SESSION_ID="ignored",
                                    HTTP_HELICONE_SESSION_ID="also-ignored")
    headers = call_headers(request)
    assert session_of(headers) == "run seven"
    plain = RequestFactory().post("/v1/chat/completions", HTTP_LANGFUSE_SESSION_ID="lf-1")
    assert session_of(call_headers(plain)) == "lf-1"
