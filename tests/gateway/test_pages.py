"""The chain page lists gateway calls; a call's page shows what was sent to the model beside the raw chain."""
from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from flows.gateway.fit import SentMessages
from flows.gateway.records import gateway_call_finish, gateway_call_start
from flows.gateway.threads import gateway_answer_append, gateway_thread
from flows.models import GatewayMode

pytestmark = pytest.mark.django_db

HOSTILE = "<script>alert('x')</script>"


@pytest.fixture
def user(django_user_model: Any) -> Any:
    return django_user_model.objects.create_user("pages-user", password="x")


def _call(user: Any, sent_messages: list[dict[str, Any]] | None = None) -> Any:
    messages = [{"role": "system", "content": "sys"}, {"role": "user", "content": HOSTILE}]
    threaded = gateway_thread(user=user, messages=messages)
    exact = sent_messages is None
    sent = SentMessages(sent_messages or messages, None, threaded.chain.last_seq, exact=exact)
    call = gateway_call_start(chain=threaded.chain, user=user, provider=None, model="m", mode=GatewayMode.OBSERVE,
                              stream=False, request_messages=2, appended=2, sent=sent)
    answer = {"role": "assistant", "content": "found port 22"}
    seq = gateway_answer_append(chain_id=threaded.chain.pk, expected_head=threaded.head_hash, message=answer)
    return gateway_call_finish(call=call, status="ok", http_status=200, latency_ms=12, response=answer,
                               response_seq=seq, usage={"prompt_tokens": 9, "completion_tokens": 3})


def test_the_chain_page_lists_the_calls_escaped(user: Any) -> None:
    call = _call(user)
    client = Client()
    client.force_login(user)
    page = client.get(f"/chains/{call.chain_id}/").content.decode()
    assert 'id="gateway-calls"' in page and f"/chains/{call.chain_id}/calls/{call.pk}/" in page
    assert "js/gateway_calls.js" in page


def test_a_calls_page_shows_sent_beside_raw_and_the_answer(user: Any) -> None:
    call = _call(user, sent_messages=[{"role": "user", "content": "pruned request"}])
    client = Client()
    client.force_login(user)
    page = client.get(f"/chains/{call.chain_id}/calls/{call.pk}/").content.decode()
    assert "Sent to the model (1)" in page and "pruned request" in page
    assert "Raw chain at the call (2)" in page and "found port 22" in page
    assert HOSTILE not in page and "&lt;script&gt;" in page


def test_a_reference_call_rebuilds_the_sent_messages_from_the_raw_chain(user: Any) -> None:
    call = _call(user)
    from flows.gateway.reads import call_sent_messages

    assert [m["content"] for m in call_sent_messages(call)] == ["sys", HOSTILE]


def test_another_users_call_is_a_404(user: Any, django_user_model: Any) -> None:
    call = _call(user)
    client = Client()
    client.force_login(django_user_model.objects.create_user("stranger", password="x"))
    assert client.get(f"/chains/{call.chain_id}/calls/{call.pk}/").status_code == 404
