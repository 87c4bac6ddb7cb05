"""Our Responses ids against the database: minted, resolved per user, read, listed, deleted, never a 500."""
from __future__ import annotations

import json
from typing import Any

import pytest

from flows.gateway.prefixes import extend_hash
from flows.gateway.response_store import (
    ID_PREFIX,
    forget_all,
    new_response_id,
    remember,
    resolve_previous,
    response_delete,
    response_input_items,
    response_read,
    response_save,
)
from flows.gateway.threads import gateway_answer_append, gateway_thread
from flows.gateway.wire import GatewayError
from flows.models import ApiToken, GatewayCall, GatewayResponse

pytestmark = pytest.mark.django_db

CALL = {"id": "call_1", "type": "function", "function": {"name": "shell", "arguments": '{"cmd":"id"}'}}
INPUT = [{"role": "system", "content": "you test hosts"}, {"role": "user", "content": "scan 10.1.1.1"}]
ANSWER = {"role": "assistant", "content": None, "tool_calls": [CALL]}


@pytest.fixture
def user(django_user_model: Any) -> Any:
    return django_user_model.objects.create_user("resp-user", password="x")


def _answered(user: Any, *, appended: bool = True) -> str:
    """One answered call: the chain holds INPUT (+ ANSWER when appended), its response saved under our id."""
    threaded = gateway_thread(user=user, messages=INPUT)
    seq = gateway_answer_append(chain_id=threaded.chain.pk, expected_head=threaded.head_hash,
                                message=ANSWER) if appended else None
    call = GatewayCall.objects.create(chain=threaded.chain, user=user, response_message=ANSWER, response_seq=seq)
    response_id = new_response_id()
    response_save(response_id=response_id, call=call, seq_to=seq or threaded.chain.last_seq,
                  history_hash=extend_hash(threaded.head_hash, ANSWER), upstream_id="resp_upstream_1",
                  upstream_stored=True, body={"id": response_id, "object": "response", "output": []})
    forget_all()  # the database path, as in another server process
    return response_id


def test_our_ids_are_opaque_and_unique() -> None:
    ids = {new_response_id() for _ in range(200)}
    assert len(ids) == 200 and all(i.startswith(ID_PREFIX) and len(i) == 53 for i in ids)


@pytest.mark.parametrize("appended", [True, False], ids=["answer-in-chain", "answer-only-in-record"])
def test_a_previous_response_id_resolves_to_the_conversation_through_its_output(user: Any, appended: bool) -> None:
    response_id = _answered(user, appended=appended)
    resolved = resolve_previous(user, response_id)
    assert [m["role"] for m in resolved.messages] == ["system", "user", "assistant"]
    assert resolved.messages[-1]["tool_calls"][0]["id"] == "call_1"
    assert resolved.row.upstream_id == "resp_upstream_1"


def test_another_users_a_deleted_and_a_never_issued_id_are_the_same_404(user: Any, django_user_model: Any) -> None:
    response_id = _answered(user)
    stranger = django_user_model.objects.create_user("stranger", password="x")
    for who, rid in ((stranger, response_id), (user, "resp_never"), (user, "")):
        with pytest.raises(GatewayError) as info:
            resolve_previous(who, rid)
        assert info.value.status == 404 and info.value.code == "response_not_found"
    assert response_delete(user, response_id) == {"id": response_id, "object": "response", "deleted": True}
    for read in (resolve_previous, response_read, response_delete, response_input_items):
        with pytest.raises(GatewayError) as info:
            read(user, response_id)
        assert info.value.status == 404
    assert GatewayResponse.objects.filter(response_id=response_id).exists()  # the record stays, hidden


def test_input_items_are_the_items_before_the_output_newest_first_by_default(user: Any) -> None:
    response_id = _answered(user)
    page = response_input_items(user, response_id)
    assert page["object"] == "list" and not page["has_more"]
    assert [item.get("role") for item in page["data"]] == ["user", "system"]
    ascending = response_input_items(user, response_id, order="asc", limit=1)
    assert ascending["data"][0]["content"] == "you test hosts" and ascending["has_more"]
    rest = response_input_items(user, response_id, order="asc", after=ascending["last_id"])
    assert [item["content"] for item in rest["data"]] == ["scan 10.1.1.1"]


def test_a_conversation_its_chain_no_longer_holds_is_a_409_not_a_wrong_history(user: Any) -> None:
    response_id = _answered(user)
    GatewayResponse.objects.filter(response_id=response_id).update(history_hash="0" * 32)
    with pytest.raises(GatewayError) as info:
        resolve_previous(user, response_id)
    assert info.value.status == 409 and info.value.code == "previous_response_unavailable"
    remember(response_id, [*INPUT, ANSWER], ["h1", "h2", "h3"])  # this process still holds it
    assert resolve_previous(user, response_id).hashes == ["h1", "h2", "h3"]


def _get(client: Any, path: str, token: str, method: str = "get") -> tuple[int, dict[str, Any]]:
    response = getattr(client, method)(path, HTTP_AUTHORIZATION=f"Bearer {token}")
    return response.status_code, json.loads(response.content)


def test_the_endpoints_read_list_and_delete_our_responses_and_hide_other_users(user: Any, django_user_model: Any,
                                                                              client: Any) -> None:
    response_id = _answered(user)
    _, token = ApiToken.issue(user=user)
    _, strangers = ApiToken.issue(user=django_user_model.objects.create_user("other", password="x"))
    assert _get(client, f"/v1/responses/{response_id}", token) == (200, {"id": response_id, "object": "response",
                                                                         "output": []})
    status, page = _get(client, f"/v1/responses/{response_id}/input_items?order=asc&limit=5", token)
    assert status == 200 and [i["role"] for i in page["data"]] == ["system", "user"]
    assert _get(client, f"/v1/responses/{response_id}/input_items?limit=500", token)[0] == 400
    assert _get(client, f"/v1/responses/{response_id}", strangers)[0] == 404
    assert _get(client, f"/v1/responses/{response_id}", "pgw_wrong")[0] == 401
    assert _get(client, f"/v1/responses/{response_id}", token, "post")[0] == 405
    assert _get(client, f"/v1/responses/{response_id}", strangers, "delete")[0] == 404
    assert _get(client, f"/v1/responses/{response_id}", token, "delete") == (200, {
        "id": response_id, "object": "response", "deleted": True})
    status, error = _get(client, f"/v1/responses/{response_id}", token)
    assert status == 404 and error["error"]["code"] == "response_not_found"
