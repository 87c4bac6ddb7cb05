"""Issue 20's bad input through the gateway's own endpoint (Django's client, the real views): session ids too
long or with control characters in every header convention and in the URL form, a session shared by two users,
and any JSON at all in the fields the fit reads. A clear OpenAI-style 400 where the request is wrong, nothing
written, never a 500."""
from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import pytest
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flows.gateway.request_needs import check_chat_fields
from flows.gateway.sessions import SESSION_HEADERS
from flows.gateway.wire import GatewayError
from flows.models import ApiToken, Chain, Flow, GatewayCall, Message, ProviderConfig, ProviderKind

pytestmark = pytest.mark.django_db

BODY = json.dumps({"model": "m", "messages": [{"role": "user", "content": "scan 10.0.0.3"}]})
BAD_SESSIONS = ["x" * 10_000, "run\x00one", "run\none", "tab\there", "\x1b[31m", "del\x7f"]


@pytest.fixture
def token(django_user_model: Any) -> str:
    # an upstream nobody listens on: a request that gets past admission fails there, with a 502
    ProviderConfig.objects.create(name="up", kind=ProviderKind.OPENAI, base_url="http://127.0.0.1:9/v1", model="m",
                                  is_default=True, timeout_seconds=2)
    return ApiToken.issue(user=django_user_model.objects.create_user("bad-input", password="x"))[1]


def _post(token: str, path: str = "/v1/chat/completions", body: str = BODY, **headers: str) -> Any:
    extra = {"HTTP_" + name.upper().replace("-", "_"): value for name, value in headers.items()}
    return Client().post(path, data=body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}",
                         **extra)


def _nothing_written() -> bool:
    return not (Flow.objects.exists() or Chain.objects.exists() or Message.objects.exists()
                or GatewayCall.objects.exists())


@pytest.mark.parametrize("header", SESSION_HEADERS)
@pytest.mark.parametrize("value", BAD_SESSIONS, ids=["10kb", "nul", "newline", "tab", "escape", "del"])
def test_a_bad_session_header_is_an_openai_400_that_writes_nothing(token: str, header: str, value: str) -> None:
    response = _post(token, **{header: value})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_session_id" and header in error["message"]
    assert _nothing_written()


@pytest.mark.parametrize("value", BAD_SESSIONS, ids=["10kb", "nul", "newline", "tab", "escape", "del"])
def test_a_bad_session_in_the_url_is_an_openai_400_that_writes_nothing(token: str, value: str) -> None:
    response = _post(token, path=f"/s/{quote(value, safe='')}/v1/chat/completions")
    assert response.status_code == 400 and response.json()["error"]["code"] == "invalid_session_id"
    assert _nothing_written()


def test_a_session_shared_by_two_users_gives_each_their_own_flow(token: str, django_user_model: Any) -> None:
    other = ApiToken.issue(user=django_user_model.objects.create_user("bad-input-2", password="x"))[1]
    mine = _post(token, **{"X-Session-Id": "shared-run"})
    theirs = _post(other, **{"X-Session-Id": "shared-run"})  # the same session id and the same messages
    again = _post(token, path="/s/shared-run/v1/chat/completions")
    assert {mine.status_code, theirs.status_code, again.status_code} == {502}  # no upstream listens
    assert mine["X-Flow-Id"] == again["X-Flow-Id"] != theirs["X-Flow-Id"]
    assert mine["X-Chain-Id"] == again["X-Chain-Id"] != theirs["X-Chain-Id"]
    owners = {flow.pk: flow.owner.username for flow in Flow.objects.filter(session_id="shared-run")}
    assert owners == {int(mine["X-Flow-Id"]): "bad-input", int(theirs["X-Flow-Id"]): "bad-input-2"}
    assert GatewayCall.objects.get(chain_id=int(again["X-Chain-Id"]), retry_of__isnull=False).user.username == \
        "bad-input"  # the resend is a retry of this user's own call, never the other's


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20)
FIT_FIELDS = ["tools", "max_tokens", "max_completion_tokens", "response_format"]


@given(st.sampled_from(FIT_FIELDS), json_values)
def test_any_json_in_a_fit_field_is_accepted_or_a_400_naming_a_field_never_another_error(field: str,
                                                                                         value: Any) -> None:
    try:
        check_chat_fields({field: value})
    except GatewayError as exc:
        assert exc.status == 400 and any(name in exc.message for name in FIT_FIELDS)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(field=st.sampled_from(FIT_FIELDS), value=json_values)
def test_any_json_in_a_fit_field_through_the_endpoint_is_never_a_500(token: str, field: str, value: Any) -> None:
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "fuzz"}], field: value})
    flows_before = Flow.objects.count()
    response = _post(token, body=body)
    assert response.status_code in (400, 502), response.content[:300]  # 502: accepted, and no upstream listens
    assert isinstance(response.json()["error"]["message"], str)
    if response.status_code == 400:
        assert Flow.objects.count() == flows_before  # refused before anything was written
