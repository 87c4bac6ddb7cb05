"""The call page as a trace: the request as sent (tools with their tokens, parameters, headers), the latency
phases, usage as rows, and what the model received aligned beside the raw chain with what happened to each."""
from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from flows.gateway.alignment import align
from flows.gateway.fit import SentMessages
from flows.gateway.records import gateway_call_complete, gateway_call_start
from flows.gateway.threads import gateway_thread
from flows.gateway.trace import REQUEST_PARAMS_MAX_BYTES, request_params
from flows.models import GatewayMode

HOSTILE = "<script>alert('x')</script>"
TOOL = {"type": "function", "function": {"name": "terminal", "description": "run a <b>shell</b> command",
                                         "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}}}


def _raw() -> list[tuple[int, dict[str, Any]]]:
    return list(enumerate([
        {"role": "system", "content": "sys"}, {"role": "user", "content": "scan 10.0.0.5"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function",
                                                             "function": {"name": "terminal", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "x" * 5000},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c2", "type": "function",
                                                             "function": {"name": "terminal", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c2", "content": "y" * 5000},
        {"role": "user", "content": "go on"}], start=1))


def test_alignment_marks_kept_summarized_truncated_and_pruned_in_raw_order():
    raw = _raw()
    sent = [raw[0][1], {"role": "user", "content": "<summary>scanned 10.0.0.5</summary>"}, raw[4][1],
            {"role": "tool", "tool_call_id": "c2", "content": "y" * 1000 + "\n…omitted…\n" + "y" * 1000}, raw[6][1]]
    rows = align(raw, sent)
    assert [r.status for r in rows] == ["kept", "summarized", "kept", "truncated", "kept"]
    assert [s.seq for s in rows[1].raw] == [2, 3, 4] and rows[1].sent_kind == "summary"
    pruned = align(raw, [*sent[:3], {"role": "tool", "tool_call_id": "c2", "content": "[cleared]"}, raw[6][1]])
    assert pruned[3].status == "pruned"


def test_request_params_keep_everything_but_the_history_and_cut_huge_tool_schemas():
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "temperature": 0.2, "tools": [TOOL]}
    params = request_params(body, {"X-Session-Id": "run-1", "Authorization": "Bearer secret"})
    assert params == {"body": {"model": "m", "temperature": 0.2, "tools": [TOOL]}, "headers": {"X-Session-Id": "run-1"}}
    huge = {**TOOL, "function": {**TOOL["function"], "description": "d" * REQUEST_PARAMS_MAX_BYTES}}
    cut = request_params({"model": "m", "tools": [huge]}, {})["body"]
    assert cut["tools"] == [{"type": "function", "function": {"name": "terminal"}}] and "names only" in cut["tools_cut"]


@pytest.mark.django_db
def test_the_call_page_leads_with_the_request_timing_and_usage_then_the_aligned_view(django_user_model):
    user = django_user_model.objects.create_user("trace-user", password="x")
    messages = [{"role": "system", "content": "sys"}, {"role": "user", "content": HOSTILE}]
    threaded = gateway_thread(user=user, messages=messages)
    call = gateway_call_start(chain=threaded.chain, user=user, provider=None, model="m", mode=GatewayMode.OBSERVE,
                              stream=True, request_messages=2, appended=2,
                              sent=SentMessages(messages, None, threaded.chain.last_seq, exact=True),
                              request_params=request_params({"model": "m", "tools": [TOOL], "top_p": 0.9},
                                                            {"X-Agent-Type": "pentester"}))
    call.phases = {"wait_ms": 3, "admitted_at_ms": 20}
    answer = {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c9", "type": "function", "function": {"name": "terminal", "arguments": '{"cmd": "nmap <x>"}'}}]}
    gateway_call_complete(call=call, expected_head=threaded.head_hash, history=messages, answer=answer, status="ok",
                          http_status=200, latency_ms=120, first_byte_ms=60,
                          usage={"prompt_tokens": 900, "completion_tokens": 30,
                                 "prompt_tokens_details": {"cached_tokens": 512}})
    client = Client()
    client.force_login(user)
    page = client.get(f"/chains/{call.chain_id}/calls/{call.pk}/").content.decode()
    request_at, aligned_at = page.index('id="trace-request"'), page.index('id="trace-aligned"')
    assert request_at < page.index('id="trace-timing"') < aligned_at < page.index('id="trace-answer"')
    assert 'data-tool="terminal"' in page and 'data-param="top_p"' in page and "pentester" in page
    assert "upstream to first byte" in page and "40 ms" in page and "cached prompt tokens" in page and "512" in page
    assert page.count('data-status="kept"') == 2 and "nmap &lt;x&gt;" in page
    assert HOSTILE not in page and "&lt;b&gt;shell&lt;/b&gt;" in page
    stored = type(call).objects.get(pk=call.pk)
    assert stored.phases["record_ms"] >= 0 and stored.phases["wait_ms"] == 3


@pytest.mark.django_db
def test_thinking_shows_as_escaped_text_on_the_chain_page_and_in_the_calls_answer(django_user_model):
    """Anthropic's thinking is stored as the message's reasoning ({content, signature}): both pages show its
    text, escaped, and never the stored dict (its signature is no reading matter)."""
    user = django_user_model.objects.create_user("thinking-user", password="x")
    thought = {"content": f"think {HOSTILE}", "signature": "sig-opaque-123"}
    messages = [{"role": "system", "content": "sys"}, {"role": "user", "content": "scan 10.0.0.6"},
                {"role": "assistant", "content": [{"type": "text", "text": "on it"}], "reasoning": thought,
                 "tool_calls": [{"id": "t1", "type": "function", "function": {"name": "terminal", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "t1", "content": "22/tcp open"}]
    threaded = gateway_thread(user=user, messages=messages)
    call = gateway_call_start(chain=threaded.chain, user=user, provider=None, model="m", mode=GatewayMode.OBSERVE,
                              stream=False, request_messages=4, appended=4,
                              sent=SentMessages(messages, None, threaded.chain.last_seq, exact=True))
    answer = {"role": "assistant", "content": [{"type": "text", "text": "done"}],
              "reasoning": {"content": f"conclude {HOSTILE}", "signature": "sig-opaque-456"}}
    gateway_call_complete(call=call, expected_head=threaded.head_hash, history=messages, answer=answer, status="ok",
                          http_status=200, latency_ms=10, first_byte_ms=5, usage=None)
    client = Client()
    client.force_login(user)
    chain_page = client.get(f"/chains/{call.chain_id}/").content.decode()
    call_page = client.get(f"/chains/{call.chain_id}/calls/{call.pk}/").content.decode()
    escaped = "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;"
    assert f"think {escaped}" in chain_page and f"conclude {escaped}" in chain_page
    assert f"conclude {escaped}" in call_page
    for page in (chain_page, call_page):
        assert HOSTILE not in page and "sig-opaque" not in page


@pytest.mark.django_db
def test_the_tools_figures_are_the_fits_own_count_the_same_the_context_breakdown_shows(django_user_model):
    from flows.engine import tools_tokens

    user = django_user_model.objects.create_user("tools-user", password="x")
    browser = {"type": "function", "function": {"name": "browser", "description": "fetch a page",
                                                "parameters": {"type": "object", "properties": {
                                                    "url": {"type": "string"}}}}}
    messages = [{"role": "system", "content": "sys"}, {"role": "user", "content": "scan"}]
    threaded = gateway_thread(user=user, messages=messages)
    sent = SentMessages(messages, None, threaded.chain.last_seq, exact=True)
    sent.budget = {"tools": tools_tokens([TOOL, browser], model="gpt-4o"), "schema": 0}
    call = gateway_call_start(chain=threaded.chain, user=user, provider=None, model="gpt-4o",
                              mode=GatewayMode.OBSERVE, stream=False, request_messages=2, appended=2, sent=sent,
                              request_params=request_params({"model": "gpt-4o", "tools": [TOOL, browser]}, {}))
    client = Client()
    client.force_login(user)
    page = client.get(f"/chains/{call.chain_id}/calls/{call.pk}/").content.decode()
    assert f"~{sent.budget['tools']:,} tokens in the request" in page
    alone = tools_tokens([TOOL], model="gpt-4o")
    row = page[page.index('data-tool="terminal"'):]
    assert f'<td class="num">{alone:,}</td>' in row[:row.index("</tr>")]
