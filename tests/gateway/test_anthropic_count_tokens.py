"""`POST /v1/messages/count_tokens` through the real view (Django's client) against the scripted Anthropic
upstream: forwarded to the provider's own endpoint when it has one (its count, as it came), else answered by
our counter and labelled an estimate (`"estimate": true`, `X-Token-Count: estimate`); never a chain, a call or
a message written."""
from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client

from flows.engine import request_tokens
from flows.models import ApiToken, Chain, GatewayCall, Message, ProviderConfig, ProviderKind
from tests.gateway.upstream_anthropic import AnthropicUpstream

pytestmark = pytest.mark.django_db

KEY = "sk-ant-count-secret"
MODEL = "claude-count-1"
SYSTEM = [{"type": "text", "text": "You are a penetration tester. " * 30, "cache_control": {"type": "ephemeral"}}]
TOOLS = [{"name": "terminal", "description": "run a shell command " * 10,
          "input_schema": {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]}}]
MESSAGES = [{"role": "user", "content": "scan 10.9.9.9"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "terminal",
                                               "input": {"cmd": "nmap 10.9.9.9"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                          "content": "22/tcp open ssh\n" * 40}]}]
BODY = {"model": MODEL, "system": SYSTEM, "tools": TOOLS, "messages": MESSAGES}


@pytest.fixture
def user_token(django_user_model: Any) -> str:
    return ApiToken.issue(user=django_user_model.objects.create_user("counter", password="x"))[1]


@pytest.fixture(params=[True, False], ids=["with-endpoint", "without-endpoint"])
def upstream(request: pytest.FixtureRequest) -> Iterator[AnthropicUpstream]:
    scripted = AnthropicUpstream(api_key=KEY, count_endpoint=request.param)
    ProviderConfig.objects.create(name="anth", kind=ProviderKind.ANTHROPIC, base_url=scripted.url, model=MODEL,
                                  api_key=KEY, is_default=True, timeout_seconds=10)
    try:
        yield scripted
    finally:
        scripted.close()


def _count(token: str, body: dict[str, Any], **headers: str) -> Any:
    extra = {"HTTP_" + name.upper().replace("-", "_"): value for name, value in headers.items()}
    return Client().post("/v1/messages/count_tokens", data=json.dumps(body), content_type="application/json",
                         HTTP_X_API_KEY=token, **extra)


def _estimate(body: dict[str, Any]) -> int:
    return request_tokens(body, "anthropic", model=MODEL).prompt


def _nothing_written() -> bool:
    return not (Chain.objects.exists() or Message.objects.exists() or GatewayCall.objects.exists())


def test_the_upstreams_own_count_is_forwarded_else_ours_is_labelled_an_estimate(
        user_token: str, upstream: AnthropicUpstream) -> None:
    response = _count(user_token, BODY, **{"anthropic-version": "2023-06-01", "anthropic-beta": "token-counting-x"})
    assert response.status_code == 200
    asked = upstream.requests[-1]
    assert asked["path"] == "/v1/messages/count_tokens" and asked["body"] == BODY
    assert asked["headers"]["x-api-key"] == KEY and asked["headers"]["anthropic-beta"] == "token-counting-x"
    answer = json.loads(response.content)
    if upstream.count_endpoint:  # the upstream counts with another tokenizer: its figure, not ours
        assert answer == {"input_tokens": request_tokens(BODY, "anthropic", model="gpt-4o").prompt}
        assert "X-Token-Count" not in response
    else:
        assert answer == {"input_tokens": _estimate(BODY), "estimate": True}
        assert response["X-Token-Count"] == "estimate"
    assert _nothing_written()


def test_the_estimate_counts_the_system_the_tools_and_every_block(user_token: str,
                                                                 upstream: AnthropicUpstream) -> None:
    if upstream.count_endpoint:
        pytest.skip("the estimate is ours only where the upstream has no count endpoint")
    bare = {"model": MODEL, "messages": MESSAGES[:1]}
    figures = [json.loads(_count(user_token, body).content)["input_tokens"] for body in (
        bare, {**bare, "system": SYSTEM}, {**bare, "system": SYSTEM, "tools": TOOLS}, BODY)]
    assert figures == sorted(set(figures)), figures  # each part adds tokens
    assert figures[-1] == _estimate(BODY)


def test_a_provider_prefix_names_the_upstream_and_is_taken_off_the_model(user_token: str,
                                                                         upstream: AnthropicUpstream) -> None:
    response = _count(user_token, {**BODY, "model": f"anth/{MODEL}"})
    assert response.status_code == 200 and upstream.requests[-1]["body"]["model"] == MODEL


def test_without_an_anthropic_provider_the_estimate_answers_and_nothing_is_asked(user_token: str) -> None:
    ProviderConfig.objects.create(name="openai", kind=ProviderKind.OPENAI, base_url="http://127.0.0.1:9/v1",
                                  model="gpt-4o", is_default=True)
    response = _count(user_token, BODY)
    assert response.status_code == 200 and json.loads(response.content) == {"input_tokens": _estimate(BODY),
                                                                             "estimate": True}
    assert _nothing_written()


def test_an_unreachable_upstream_falls_back_to_the_estimate(user_token: str) -> None:
    ProviderConfig.objects.create(name="gone", kind=ProviderKind.ANTHROPIC, base_url="http://127.0.0.1:9",
                                  model=MODEL, is_default=True, timeout_seconds=2)
    response = _count(user_token, BODY)
    assert response.status_code == 200 and json.loads(response.content)["estimate"] is True


@pytest.mark.parametrize("headers,status,kind", [({}, 401, "authentication_error"),
                                                 ({"HTTP_X_API_KEY": "sk-wrong"}, 401, "authentication_error")])
def test_a_missing_or_wrong_key_is_an_anthropic_401(headers: dict[str, str], status: int, kind: str) -> None:
    response = Client().post("/v1/messages/count_tokens", data=json.dumps(BODY), content_type="application/json",
                             **headers)
    error = json.loads(response.content)
    assert response.status_code == status and error["type"] == "error" and error["error"]["type"] == kind


def test_a_get_is_an_anthropic_405() -> None:
    response = Client().get("/v1/messages/count_tokens")
    assert response.status_code == 405 and response["Allow"] == "POST"
    assert json.loads(response.content)["error"]["type"] == "invalid_request_error"
