"""Retries are not rewrites: a request an earlier call already sent continues that call's chain, recorded as a
retry of it (prepare_call against the database; the upstream is never reached here)."""
from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from flows.gateway.admission import PreparedCall, prepare_call
from flows.gateway.protocols import CHAT
from flows.gateway.reads import call_sent_messages
from flows.gateway.records import gateway_call_complete
from flows.models import Chain, GatewayCall, Message, ProviderConfig, ProviderKind, SummaryEvent, Trigger

pytestmark = pytest.mark.django_db

SYSTEM = {"role": "system", "content": "You are a pentester."}
TASK = {"role": "user", "content": "scan 10.0.0.7 <b>now</b>"}


@pytest.fixture
def user(django_user_model: Any) -> Any:
    ProviderConfig.objects.create(name="up", kind=ProviderKind.OPENAI, base_url="http://127.0.0.1:9/v1", model="m",
                                  is_default=True)
    return django_user_model.objects.create_user("retrier", password="x")


def _send(user: Any, messages: list[dict[str, Any]], mode: str = "observe") -> PreparedCall:
    raw = json.dumps({"model": "m", "messages": messages}).encode()
    return prepare_call(user, {"X-Gateway-Mode": mode}, CHAT.parse(raw, {}, ""))


def _answer(prepared: PreparedCall, text: str) -> GatewayCall:
    return gateway_call_complete(call=prepared.call, expected_head=prepared.head_hash, history=prepared.history,
                                 after_seq=prepared.chain.last_seq, answer={"role": "assistant", "content": text},
                                 status="ok", http_status=200, latency_ms=1, replay=prepared.replay)


def _rewrites() -> int:
    return SummaryEvent.objects.filter(trigger=Trigger.CLIENT_REWRITE).count()


@pytest.mark.parametrize("mode", ["observe", "manage"])
def test_a_request_resent_after_its_answer_is_a_retry_of_the_first_call_not_a_rewrite(user: Any, mode: str) -> None:
    first = _send(user, [SYSTEM, TASK], mode)
    _answer(first, "port 22 is open")
    for attempt in range(3):
        again = _send(user, [SYSTEM, TASK], mode)
        assert again.chain.pk == first.chain.pk and again.replay
        assert again.call.retry_of_id == first.call.pk and again.call.appended == 0
        assert [m["content"] for m in again.sent.messages] == [SYSTEM["content"], TASK["content"]]
        _answer(again, f"port 22 is open ({attempt})")
    assert Chain.objects.count() == 1 and _rewrites() == 0
    assert list(Message.objects.filter(chain_id=first.chain.pk).values_list("content", flat=True)) == [
        SYSTEM["content"], TASK["content"], "port 22 is open"]  # a retry's answer stays on its call only
    assert GatewayCall.objects.get(pk=again.call.pk).response_message["content"] == "port 22 is open (2)"


def test_a_replay_of_an_earlier_turn_sends_what_that_call_sent_not_the_newer_chain(user: Any) -> None:
    first = _send(user, [SYSTEM, TASK])
    _answer(first, "port 22 is open")
    later = _send(user, [SYSTEM, TASK, {"role": "assistant", "content": "port 22 is open"},
                         {"role": "user", "content": "now port 80"}])
    _answer(later, "port 80 is closed")
    replay = _send(user, [SYSTEM, TASK])
    assert replay.chain.pk == first.chain.pk and replay.call.retry_of_id == first.call.pk
    assert call_sent_messages(replay.call) == call_sent_messages(first.call)
    assert Chain.objects.get(pk=first.chain.pk).last_seq == 5 and _rewrites() == 0


def test_a_resend_of_a_failed_call_continues_the_chain_as_its_retry(user: Any) -> None:
    first = _send(user, [SYSTEM, TASK])  # its answer never came: the chain's head is still the request
    again = _send(user, [SYSTEM, TASK])
    assert again.chain.pk == first.chain.pk and not again.replay
    assert again.call.retry_of_id == first.call.pk and again.call.appended == 0


def test_a_history_that_really_differs_still_starts_a_successor_with_its_rewrite_event(user: Any) -> None:
    first = _send(user, [SYSTEM, TASK])
    _answer(first, "port 22 is open")
    _send(user, [SYSTEM, TASK])  # a retry, no successor
    rewritten = _send(user, [SYSTEM, TASK, {"role": "assistant", "content": "summary: 22 open"},
                             {"role": "user", "content": "go on"}])
    assert rewritten.chain.pk != first.chain.pk and rewritten.chain.parent_id == first.chain.pk
    assert rewritten.call.retry_of_id is None and _rewrites() == 1


def test_another_users_identical_request_is_not_a_retry_of_this_users_call(user: Any,
                                                                           django_user_model: Any) -> None:
    mine = _send(user, [SYSTEM, TASK])
    _answer(mine, "port 22 is open")
    theirs = _send(django_user_model.objects.create_user("other", password="x"), [SYSTEM, TASK])
    assert theirs.chain.pk != mine.chain.pk and theirs.call.retry_of_id is None


def test_the_call_page_names_the_call_a_retry_repeats(user: Any) -> None:
    first = _send(user, [SYSTEM, TASK])
    _answer(first, "port 22 is open")
    again = _send(user, [SYSTEM, TASK])
    client = Client()
    client.force_login(user)
    page = client.get(f"/chains/{again.chain.pk}/calls/{again.call.pk}/").content.decode()
    assert f'retry of <a href="/chains/{first.chain.pk}/calls/{first.call.pk}/">call #{first.call.pk}</a>' in page
    assert "<b>now</b>" not in page and "&lt;b&gt;now&lt;/b&gt;" in page
    first_page = client.get(f"/chains/{first.chain.pk}/calls/{first.call.pk}/").content.decode()
    assert "retry of" not in first_page
