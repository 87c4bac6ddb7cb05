"""A total deadline on every model call: an endpoint that sends its headers and then one byte every 2 s keeps
each read alive, so only `timeout x attempts` in total ends the call; the summarization then fails with the
reason instead of running for hours. Against a real dripping HTTP server on 127.0.0.1."""
from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from django.contrib.auth import get_user_model

from flows.ingest import flow_create
from flows.models import LLMCall, Outcome, SummaryEvent
from flows.pipeline.llm.callables import summarize_callable_for
from flows.pipeline.llm.client import complete, total_deadline_seconds
from flows.pipeline.llm.errors import RetryableProviderError, SummaryFailed
from flows.pipeline.tasks import compact_chain_task

from .llm_fakes import FakeEndpoint, completion, drip, isolate_llm, make_provider, running_endpoint
from .pipeline_support import small_budgets

pytestmark = [pytest.mark.django_db, pytest.mark.timeout(60)]
DRIP_SECONDS_PER_BYTE = 2.0
TIMEOUT_SECONDS = 2.5  # longer than the drip interval: no single read ever times out
ATTEMPTS = 2
# The deadline, plus at most one drip interval for the chunk in flight, plus slack for a loaded machine.
BOUND_SECONDS = TIMEOUT_SECONDS * ATTEMPTS + DRIP_SECONDS_PER_BYTE + 2.0


@pytest.fixture
def endpoint(monkeypatch) -> Iterator[FakeEndpoint]:
    isolate_llm(monkeypatch)
    with running_endpoint() as running:
        yield running


@pytest.fixture
def flow():
    owner = get_user_model().objects.create_user("deadline-owner")
    return flow_create(owner=owner, title="deadline", model_name="agent-model")


def _dripping(endpoint, attempts: int = ATTEMPTS):
    provider = make_provider(endpoint.url, timeout_seconds=TIMEOUT_SECONDS, max_attempts=attempts)
    endpoint.queue(*[drip(DRIP_SECONDS_PER_BYTE, completion("never finished"))] * attempts)
    return provider


def test_a_dripping_endpoint_is_cut_off_at_the_total_deadline(endpoint):
    provider = _dripping(endpoint)
    assert total_deadline_seconds(provider) == TIMEOUT_SECONDS * ATTEMPTS
    started = time.monotonic()
    with pytest.raises(RetryableProviderError, match="total deadline of 5 s") as failed:
        complete(provider, "fake-model", [{"role": "user", "content": "hi"}])
    assert time.monotonic() - started < BOUND_SECONDS
    assert failed.value.attempts == 1  # the first attempt used up the whole budget: no second one


def _long_chain(make_chain, flow):
    messages = [{"role": "system", "content": "You are a pentester."}]
    for n in range(8):
        call_id = f"call_{n:024d}"
        messages += [{"role": "user", "content": f"scan host 10.0.0.{n}"},
                     {"role": "assistant", "content": None, "tool_calls": [{"id": call_id, "type": "function",
                      "function": {"name": "terminal", "arguments": f'{{"input": "nmap 10.0.0.{n}"}}'}}]},
                     {"role": "tool", "tool_call_id": call_id, "content": f"22/tcp open ssh\n{'x' * 3000}"},
                     {"role": "assistant", "content": f"host {n}: ssh open"}]
    chain = make_chain(messages, flow=flow)
    small_budgets(chain, keep_recent_tokens=400)  # leave older rounds for the compaction to summarize
    return chain


def test_a_compaction_against_a_dripping_endpoint_ends_as_a_failed_event(endpoint, flow, make_chain):
    _dripping(endpoint)
    chain = _long_chain(make_chain, flow)
    started = time.monotonic()
    compact_chain_task(chain.pk)
    elapsed = time.monotonic() - started
    event = SummaryEvent.objects.filter(chain=chain).latest("pk")
    assert event.outcome == Outcome.FAILED, (event.outcome, event.reason)
    assert "timed out" in event.reason or "deadline" in event.reason, event.reason
    assert LLMCall.objects.filter(event=event, ok=False).exists()
    assert elapsed < BOUND_SECONDS + 3, elapsed


def test_summarize_callable_reports_the_deadline(endpoint, flow):
    _dripping(endpoint)
    with pytest.raises(SummaryFailed, match="summarization failed"):
        summarize_callable_for(flow=flow)("<messages>x</messages>")
