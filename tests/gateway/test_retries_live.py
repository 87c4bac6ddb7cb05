"""Retries through the real server (`manage.py run`, the official `openai` SDK, the scripted upstream): the
same request sent again and again stays one chain; a history that really differs still starts a successor."""
from __future__ import annotations

from typing import Any

import openai
import pytest

from tests.gateway.agent_loop import SYSTEM, TOOLS
from tests.gateway.conftest import Gateway
from tests.gateway.upstream_fake import MODEL

pytestmark = pytest.mark.timeout(300)

RESENDS = 50


def _send(gateway: Gateway, messages: list[dict[str, Any]]) -> int:
    client = openai.OpenAI(base_url=gateway.v1, api_key=gateway.token, max_retries=0, timeout=60)
    raw = client.chat.completions.with_raw_response.create(model=MODEL, messages=messages, tools=TOOLS)
    assert raw.parse().choices[0].message is not None
    return int(raw.headers["X-Chain-Id"])


def test_the_same_request_sent_50_times_stays_one_chain(gateway: Gateway) -> None:
    request = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "resend: scan 10.10.5.23"}]
    chain_ids = {_send(gateway, request) for _ in range(RESENDS)}
    assert len(chain_ids) == 1
    chain_id = chain_ids.pop()
    calls = gateway.query(f"list(GatewayCall.objects.filter(chain_id={chain_id}).order_by('pk')"
                          ".values_list('pk', 'retry_of_id', 'status'))")
    assert len(calls) == RESENDS and all(status == "ok" for _, _, status in calls)
    first = calls[0][0]
    assert calls[0][1] is None and all(retry_of == first for _, retry_of, _ in calls[1:])
    assert [m["role"] for m in gateway.chain(chain_id)["raw"]] == ["system", "user", "assistant"]
    flow_chains = gateway.query(f"Chain.objects.filter(agent__flow__agents__chains={chain_id}).distinct().count()")
    rewrites = gateway.query(f"SummaryEvent.objects.filter(chain__agent__chains={chain_id}, "
                             "trigger='client-rewrite').count()")
    assert (flow_chains, rewrites) == (1, 0)


def test_after_resends_a_history_that_really_differs_starts_a_successor_with_its_rewrite_event(
        gateway: Gateway) -> None:
    request = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "resend then rewrite"}]
    first = {_send(gateway, request) for _ in range(3)}
    assert len(first) == 1
    original = first.pop()
    successor = _send(gateway, [*request, {"role": "assistant", "content": "Summary: nothing scanned yet."},
                                {"role": "user", "content": "resend then rewrite: go on"}])
    assert successor != original
    assert gateway.query(f"Chain.objects.get(pk={successor}).parent_id") == original
    reasons = gateway.query(f"list(SummaryEvent.objects.filter(chain_id={successor}, trigger='client-rewrite')"
                            ".values_list('reason', flat=True))")
    assert len(reasons) == 1 and f"chain #{original}" in reasons[0]
