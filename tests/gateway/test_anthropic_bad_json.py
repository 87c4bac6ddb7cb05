"""Hostile JSON on Anthropic's endpoints (`/v1/messages`, `/v1/messages/count_tokens`) through the real views
(Django's client): the same checks as the other wires' shared reader (nesting past MAX_JSON_DEPTH, an integer
past Python's conversion limit, a lone UTF-16 surrogate, bytes that are not UTF-8, a body that is not an
object, a model no record can hold), answered in Anthropic's error JSON with a 400; nothing written, never a
500."""
from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from flows.core import MAX_JSON_DEPTH
from flows.models import ApiToken, Chain, Flow, GatewayCall, Message, ProviderConfig, ProviderKind

pytestmark = pytest.mark.django_db

ENDPOINTS = ["/v1/messages", "/v1/messages/count_tokens"]


def _body(model: str = '"claude-x"', content: str = '"hi"') -> bytes:
    return (f'{{"model": {model}, "max_tokens": 64, "messages": [{{"role": "user", "content": {content}}}]}}'
            ).encode()


def _nested(depth: int) -> str:
    return '{"type": "text", "text": "x", "z": ' + "[" * depth + "]" * depth + "}"


HOSTILE = {
    "5000-deep content": (_body(content="[" * 5000 + "]" * 5000), "nested deeper"),
    "content just past the depth limit": (_body(content=f"[{_nested(MAX_JSON_DEPTH)}]"), "nested deeper"),
    "lone surrogate in content": (_body(content='"scan \\ud800 now"'), "surrogate"),
    "lone surrogate in a block": (_body(content='[{"type": "text", "text": "\\udfff"}]'), "surrogate"),
    "lone surrogate in system": (b'{"model": "claude-x", "max_tokens": 8, "system": "\\ud83d", '
                                 b'"messages": [{"role": "user", "content": "hi"}]}', "surrogate"),
    "lone surrogate in a key": (b'{"model": "claude-x", "\\ud800": 1, "messages": [{"role": "user", '
                                b'"content": "hi"}]}', "surrogate"),
    "lone surrogate in model": (_body(model='"claude\\udfff"'), "surrogate"),
    "integer over 4300 digits": (_body(content="9" * 5000), "not valid JSON"),
    "not UTF-8": (b'{"model": "claude-x", "messages": [{"role": "user", "content": "\xff\xfe"}]}', "UTF-8"),
    "not JSON": (b"{'model': 'claude-x'}", "not valid JSON"),
    "empty": (b"", "not valid JSON"),
    "a list": (b'[{"model": "claude-x"}]', "JSON object"),
    "a string": (b'"messages"', "JSON object"),
    "a number": (b"42", "JSON object"),
    "null": (b"null", "JSON object"),
    "NUL in model": (_body(model='"claude\\u0000x"'), "model"),
    "300-character model": (_body(model=json.dumps("m" * 300)), "model"),
}


@pytest.fixture
def token(django_user_model: Any) -> str:
    # an upstream nobody listens on: a request that got past the checks would fail there (a 502), not a 400
    ProviderConfig.objects.create(name="anth", kind=ProviderKind.ANTHROPIC, base_url="http://127.0.0.1:9",
                                  model="claude-x", is_default=True, timeout_seconds=2)
    return ApiToken.issue(user=django_user_model.objects.create_user("bad-json", password="x"))[1]


def _post(token: str, path: str, body: bytes) -> Any:
    return Client().post(path, data=body, content_type="application/json", HTTP_X_API_KEY=token,
                         HTTP_ANTHROPIC_VERSION="2023-06-01")


def _nothing_written() -> bool:
    return not (Flow.objects.exists() or Chain.objects.exists() or Message.objects.exists()
                or GatewayCall.objects.exists())


def _anthropic_400(response: Any) -> str:
    assert response.status_code == 400, (response.status_code, response.content[:300])
    assert response["Content-Type"].startswith("application/json")
    error = json.loads(response.content)
    assert set(error) == {"type", "error"} and error["type"] == "error"
    assert error["error"]["type"] == "invalid_request_error"
    return str(error["error"]["message"])


@pytest.mark.parametrize("path", ENDPOINTS)
@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_json_is_an_anthropic_400_that_writes_nothing(token: str, path: str, name: str) -> None:
    body, needle = HOSTILE[name]
    assert needle in _anthropic_400(_post(token, path, body))
    assert _nothing_written()


def test_nesting_at_the_limit_is_read_and_only_past_it_refused(token: str) -> None:
    """Body, messages, turn, content, block: five levels, then the block's own nesting up to the limit."""
    at_limit = _body(content=f"[{_nested(MAX_JSON_DEPTH - 5)}]")
    counted = _post(token, "/v1/messages/count_tokens", at_limit)
    assert counted.status_code == 200 and json.loads(counted.content)["estimate"] is True
    forwarded = _post(token, "/v1/messages", at_limit)  # read, then refused by the upstream nobody listens on
    assert forwarded.status_code == 502 and json.loads(forwarded.content)["type"] == "error"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=20),
                         lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                                      max_size=4), max_leaves=20))
def test_any_json_that_is_not_a_messages_request_is_an_anthropic_4xx_never_a_500(token: str, body: Any) -> None:
    assume(not (isinstance(body, dict) and "model" in body and "messages" in body))
    for path in ENDPOINTS:
        response = _post(token, path, json.dumps(body).encode())
        assert response.status_code in (400, 413), (path, body, response.status_code)
        assert json.loads(response.content)["type"] == "error"
    assert _nothing_written()
