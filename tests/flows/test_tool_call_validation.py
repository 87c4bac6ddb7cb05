"""Issue 26 item 7: tool calls the chain could never answer are refused when they arrive (API and gateway share
`ingest.validate_batch`). Found: the same id twice with one answer, `function: null`, and a 300-character or NUL
id were accepted; the last made the agent's next result impossible to append (on PostgreSQL a 500 forever).

Runs on SQLite by default; with DATABASE_URL=postgres://... the same tests run on PostgreSQL."""
from __future__ import annotations

import json
from typing import Any

import pytest

from flows.models import Message

pytestmark = pytest.mark.django_db


def _call(call_id: str, function: Any = "default") -> dict[str, Any]:
    fn = {"name": "terminal", "arguments": "{}"} if function == "default" else function
    return {"id": call_id, "type": "function", "function": fn}


def _turn(*calls: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"role": "user", "content": "go"}, {"role": "assistant", "content": None, "tool_calls": list(calls)}]


@pytest.mark.parametrize(("calls", "field"), [
    ((_call("call_1"), _call("call_1")), "tool_calls[1].id"),
    ((_call("call_1", function=None),), "tool_calls[0].function"),
    ((_call("c" * 300),), "tool_calls[0].id"),
    ((_call("call_\x00x"),), "tool_calls[0].id"),
])
def test_an_unanswerable_tool_call_is_a_400_that_writes_nothing(api_client, make_chain, calls, field):
    chain = make_chain(messages=[{"role": "system", "content": "s"}])
    response = api_client.post(f"/api/chains/{chain.pk}/messages", {"messages": _turn(*calls)})
    assert response.status_code == 400, response.content
    body = response.json()
    assert (body["error"], body["index"], body["field"]) == ("invalid_message", 1, field)
    assert Message.objects.filter(chain=chain).count() == 1


def test_a_call_with_a_200_character_id_and_its_result_both_append(api_client, make_chain):
    chain = make_chain(messages=[{"role": "system", "content": "s"}])
    call_id = "c" * 200
    batch = [*_turn(_call(call_id)), {"role": "tool", "tool_call_id": call_id, "content": "ok"}]
    response = api_client.post(f"/api/chains/{chain.pk}/messages", {"messages": batch})
    assert response.status_code == 201, response.content


@pytest.mark.parametrize(("calls", "answers", "needle"), [
    ((_call("call_1"), _call("call_1")), ["call_1"], "appears twice in one message"),
    ((_call("call_1", function=None),), [], "needs a 'function' object"),
    ((_call("c" * 300),), [], "longer than 200 characters"),
    ((_call("call_\x00x"),), [], "tool_calls[0].id"),
    ((_call("call_1"),), ["call_1", "call_1"], "already answered"),
])
def test_the_gateway_refuses_the_same_calls_in_openai_json_and_writes_nothing(api_token, calls, answers, needle):
    from django.test import Client

    from flows.models import GatewayCall

    messages = [*_turn(*calls), *({"role": "tool", "tool_call_id": a, "content": "ok"} for a in answers)]
    response = Client().post("/v1/chat/completions", json.dumps({"model": "m", "messages": messages}),
                             content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {api_token}")
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error" and needle in error["message"], error
    assert Message.objects.count() == 0 and GatewayCall.objects.count() == 0
