"""A call refused before it reaches an upstream writes no flow, agent, chain or message."""
from __future__ import annotations

import json
from typing import Any

import pytest

from flows.gateway.admission import prepare_call
from flows.gateway.protocols import CHAT
from flows.gateway.wire import GatewayError, parse_chat_request
from flows.models import Agent, Chain, Flow, GatewayCall, Message, ProviderConfig, ProviderKind

pytestmark = pytest.mark.django_db


def _raw(**fields: Any) -> bytes:
    return json.dumps({"model": "m", "messages": [{"role": "user", "content": "scan 10.0.0.1"}], **fields}).encode()


def _nothing_written() -> bool:
    return not (Flow.objects.exists() or Agent.objects.exists() or Chain.objects.exists()
                or Message.objects.exists() or GatewayCall.objects.exists())


@pytest.fixture
def user(django_user_model: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    for name in ("LLM_SERVER_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    return django_user_model.objects.create_user("litter", password="x")


def test_no_upstream_is_a_503_that_writes_nothing(user: Any) -> None:
    with pytest.raises(GatewayError) as raised:
        prepare_call(user, {}, parse_chat_request(_raw()))
    assert raised.value.status == 503 and raised.value.code == "no_upstream"
    assert raised.value.headers == {}  # no chain to name: it was rolled back
    assert _nothing_written()


def test_a_bad_mode_header_is_a_400_that_writes_nothing(user: Any) -> None:
    ProviderConfig.objects.create(name="up", kind=ProviderKind.OPENAI, base_url="http://127.0.0.1:9/v1", model="m",
                                  is_default=True)
    with pytest.raises(GatewayError) as raised:
        prepare_call(user, {"X-Gateway-Mode": "sometimes"}, parse_chat_request(_raw()))
    assert raised.value.status == 400 and _nothing_written()


def test_bad_fit_fields_are_refused_before_threading(user: Any) -> None:
    ProviderConfig.objects.create(name="up", kind=ProviderKind.OPENAI, base_url="http://127.0.0.1:9/v1", model="m",
                                  is_default=True)
    with pytest.raises(GatewayError):
        prepare_call(user, {}, CHAT.parse(_raw(max_tokens=-1), {}, ""))
    assert _nothing_written()
