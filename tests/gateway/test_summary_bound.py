"""Issue 26 item 3: manage-mode summarizing on the request path is bounded: a cap on summarizer calls per request
and a total deadline, after which the call goes upstream anyway (the offline summarizer fitting the rest).
Deterministic: the summarizer counts its calls, and the deadline test's summarizer blocks until released, so
the answer can only arrive because the bound stopped waiting (no wall-clock assertion)."""
from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client

from flows.config import settings_save
from flows.gateway.fit import gateway_overflow_compact, gateway_view_prepare
from flows.gateway.threads import gateway_thread
from flows.ingest import api_token_create
from flows.models import ModelWindow, Outcome, ProviderConfig, ProviderKind, SummaryEvent
from flows.pipeline import OFFLINE, CallGuard, use_summarizer_factory
from tests.fakes import FakeSummarizer
from tests.gateway.agent_loop import SYSTEM, TOOLS, tool_output
from tests.gateway.upstream_fake import MODEL, FakeUpstream

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]

WINDOW_TOKENS = 6000
SECTIONS = 40  # one user turn each: PentAGI's passes condense every section but the last, one call each


@pytest.fixture
def user(django_user_model: Any) -> Any:
    ModelWindow.objects.create(model=MODEL, context_window=WINDOW_TOKENS, max_output_tokens=500)
    return django_user_model.objects.create_user("bound-user", password="x")


def _history(sections: int = SECTIONS) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}]
    for i in range(sections):
        messages.append({"role": "user", "content": f"step {i}: scan 10.10.5.{i}"})
        messages.append({"role": "assistant", "content": None, "tool_calls": [{
            "id": f"call_{i}", "type": "function",
            "function": {"name": "run_command", "arguments": json.dumps({"cmd": f"nmap 10.10.5.{i}"})}}]})
        messages.append({"role": "tool", "tool_call_id": f"call_{i}", "content": tool_output(f"nmap {i}", i)})
        messages.append({"role": "assistant", "content": f"host 10.10.5.{i} scanned"})
    return messages


def _chain_id(user: Any) -> int:
    return gateway_thread(user=user, messages=_history(), model_name=MODEL).chain.pk


def _reasons(chain_id: int) -> str:
    return "\n".join(SummaryEvent.objects.filter(chain_id=chain_id).values_list("reason", flat=True))


def test_a_history_needing_many_summaries_never_passes_the_cap_and_is_still_sent(user: Any) -> None:
    chain_id = _chain_id(user)
    model = FakeSummarizer("## Summary\nscanned a host")
    with use_summarizer_factory(lambda **_: model):
        sent = gateway_view_prepare(chain_id=chain_id, model=MODEL, guard=CallGuard(fallback=OFFLINE, max_calls=5))
    assert 1 <= model.calls <= 5
    assert sent.messages and sent.messages[0]["role"] == "system"
    assert "the call's cap of 5 summarizer calls was reached" in _reasons(chain_id)
    assert "the offline summarizer stood in" in _reasons(chain_id)


def test_a_summarizer_that_never_answers_does_not_hold_the_call_past_its_deadline(user: Any) -> None:
    chain_id = _chain_id(user)
    release, entered = threading.Event(), threading.Event()
    calls, lock = [0], threading.Lock()

    def blocked(prompt: str) -> str:
        with lock:
            calls[0] += 1
        entered.set()
        release.wait(60)
        return "too late"

    try:
        with use_summarizer_factory(lambda **_: blocked):
            sent = gateway_view_prepare(chain_id=chain_id, model=MODEL,
                                        guard=CallGuard(fallback=OFFLINE, deadline_seconds=0.5, max_calls=8))
        # answered although no summarizer call has returned: the deadline stopped the waiting
        assert entered.is_set() and not release.is_set() and sent.messages
        assert calls[0] <= 8
        assert "summarizing deadline of 0.5 s" in _reasons(chain_id)
    finally:
        release.set()


def test_in_fail_mode_the_cap_still_lets_the_call_go_upstream_unchanged(user: Any) -> None:
    chain_id = _chain_id(user)
    model = FakeSummarizer("## Summary\nscanned a host")
    with use_summarizer_factory(lambda **_: model):
        sent = gateway_view_prepare(chain_id=chain_id, model=MODEL, guard=CallGuard(fallback="fail", max_calls=2))
    assert model.calls <= 2 and sent.messages
    assert "stood in" not in _reasons(chain_id)


def test_a_summary_that_fails_the_identifier_audit_twice_is_written_offline(user: Any) -> None:
    chain_id = _chain_id(user)
    careless = FakeSummarizer("## Goal\nThe agent scanned some hosts.\n## Progress\nThings were found.")
    with use_summarizer_factory(lambda **_: careless):
        sent = gateway_overflow_compact(chain_id=chain_id, observed_tokens=WINDOW_TOKENS * 3, model=MODEL,
                                        guard=CallGuard(fallback=OFFLINE))
    event = SummaryEvent.objects.filter(chain_id=chain_id, trigger="overflow").get()
    assert event.outcome == Outcome.OK and not sent.failure
    assert "audit failed" in event.reason and "the offline summarizer stood in" in event.reason, event.reason
    assert careless.calls >= 2  # asked, audited, asked again: then the offline summarizer


def test_the_same_audit_failure_in_fail_mode_fails_closed(user: Any) -> None:
    chain_id = _chain_id(user)
    careless = FakeSummarizer("## Goal\nThe agent scanned some hosts.\n## Progress\nThings were found.")
    with use_summarizer_factory(lambda **_: careless):
        sent = gateway_overflow_compact(chain_id=chain_id, observed_tokens=WINDOW_TOKENS * 3, model=MODEL,
                                        guard=CallGuard(fallback="fail"))
    assert "audit failed" in sent.failure
    assert SummaryEvent.objects.get(chain_id=chain_id, trigger="overflow").outcome == Outcome.FAILED


@pytest.fixture
def upstream() -> Iterator[FakeUpstream]:
    server = FakeUpstream(window_tokens=WINDOW_TOKENS)
    yield server
    server.close()


def test_the_call_takes_its_cap_from_the_settings_and_is_answered(user: Any, upstream: FakeUpstream) -> None:
    ProviderConfig.objects.create(name="up", kind=ProviderKind.OPENAI, base_url=upstream.url, model=MODEL,
                                  api_key="sk-x", is_default=True, timeout_seconds=30, max_attempts=1)
    settings_save(profile="agent", flow=None, data={"summary_max_calls": 3}, source="api")
    model = FakeSummarizer("## Summary\nscanned a host")
    body = {"model": MODEL, "messages": _history() + [{"role": "user", "content": "next"}], "tools": TOOLS}
    with use_summarizer_factory(lambda **_: model):
        response = Client().post("/v1/chat/completions", json.dumps(body), content_type="application/json",
                                 HTTP_AUTHORIZATION=f"Bearer {api_token_create(user=user)[1]}")
    assert response.status_code == 200, response.content[:400]
    assert 1 <= model.calls <= 3
    assert "cap of 3 summarizer calls" in _reasons(int(response["X-Chain-Id"]))
