"""/api/flows: create, list, read, add agents, export; visibility between users."""
from __future__ import annotations

import json

import pytest

from flows.models import Chain, Flow
from summarizer import import_chain

pytestmark = pytest.mark.django_db


def test_it_creates_a_flow_owned_by_the_token_user(api_client, user):
    resp = api_client.post("/api/flows", {"title": "Pentest of 10.0.0.5", "model_name": "gpt-4o"})
    assert resp.status_code == 201
    body = resp.json()
    flow = Flow.objects.get(pk=body["id"])
    assert (flow.owner, flow.title, flow.model_name) == (user, "Pentest of 10.0.0.5", "gpt-4o")


def test_a_trailing_slash_is_optional(api_client):
    assert api_client.post("/api/flows/", {"title": "x"}).status_code == 201
    flow_id = Flow.objects.get().pk
    assert api_client.get(f"/api/flows/{flow_id}/").status_code == 200
    assert api_client.get(f"/api/flows/{flow_id}").status_code == 200


@pytest.mark.parametrize("body", [{}, {"title": ""}, {"title": 5}, {"title": "x" * 201}, ["title"]])
def test_it_rejects_a_bad_flow_body_with_400(api_client, body):
    resp = api_client.post("/api/flows", body)
    assert resp.status_code == 400
    assert resp.json()["error"] in ("invalid_field", "invalid_body")
    assert not Flow.objects.exists()


def test_the_list_shows_only_my_flows_but_staff_see_all(api_client, make_flow, other_user, staff_user):
    mine = make_flow(title="mine")
    make_flow(owner=other_user, title="theirs")
    assert [f["id"] for f in api_client.get("/api/flows").json()["flows"]] == [mine.pk]
    staff = api_client.__class__()
    staff.force_login(staff_user)
    assert len(staff.get("/api/flows").json()["flows"]) == 2


def test_another_users_flow_is_a_404(api_client, make_flow, other_user):
    theirs = make_flow(owner=other_user)
    assert api_client.get(f"/api/flows/{theirs.pk}").status_code == 404
    resp = api_client.post(f"/api/flows/{theirs.pk}/agents", {"agent_type": "coder"})
    assert resp.status_code == 404 and resp.json()["error"] == "not_found"
    assert not theirs.agents.exists()


def test_adding_an_agent_creates_its_active_chain(api_client, make_flow):
    flow = make_flow()
    resp = api_client.post(f"/api/flows/{flow.pk}/agents", {"agent_type": "assistant", "profile": "assistant"})
    assert resp.status_code == 201
    body = resp.json()
    chain = Chain.objects.get(pk=body["chain_id"])
    assert chain.is_active and chain.agent_id == body["id"] and body["profile"] == "assistant"
    detail = api_client.get(f"/api/flows/{flow.pk}").json()
    assert [a["chain_id"] for a in detail["agents"]] == [chain.pk]


@pytest.mark.parametrize("body", [{"agent_type": "wizard"}, {"agent_type": "coder", "profile": "boss"}, {}])
def test_it_rejects_unknown_agent_types_and_profiles(api_client, make_flow, body):
    flow = make_flow()
    assert api_client.post(f"/api/flows/{flow.pk}/agents", body).status_code == 400
    assert not flow.agents.exists()


@pytest.mark.parametrize("fmt", ["openai", "pentagi", "openclaw"])
def test_export_gives_back_the_chain_in_each_format(api_client, make_chain, tool_round, fmt):
    chain = make_chain(messages=tool_round)
    resp = api_client.get(f"/api/flows/{chain.agent.flow_id}/export?format={fmt}")
    assert resp.status_code == 200
    assert "attachment" in resp["Content-Disposition"]
    assert import_chain(resp.content, fmt) == tool_round


def test_export_rejects_an_unknown_format(api_client, make_chain, tool_round):
    chain = make_chain(messages=tool_round)
    resp = api_client.get(f"/api/flows/{chain.agent.flow_id}/export?format=xml")
    assert resp.status_code == 400 and resp.json()["error"] == "invalid_format"


def test_export_of_a_named_chain_of_another_flow_is_a_404(api_client, make_chain, tool_round):
    mine, other = make_chain(messages=tool_round), make_chain(messages=tool_round)
    resp = api_client.get(f"/api/flows/{mine.agent.flow_id}/export?chain={other.pk}")
    assert resp.status_code == 404


def test_export_body_is_valid_json_for_the_json_formats(api_client, make_chain, tool_round):
    chain = make_chain(messages=tool_round)
    body = api_client.get(f"/api/flows/{chain.agent.flow_id}/export?format=pentagi").content
    assert json.loads(body)[0] == {"role": "system", "text": "You are a pentester."}
