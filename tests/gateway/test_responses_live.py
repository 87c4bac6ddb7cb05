"""The official openai client's `responses.create` through the gateway (`manage.py run`) against a scripted
Responses upstream that enforces its window and requires `encrypted_content` back unchanged."""
from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import openai
import pytest

from tests.flows.pipeline_live import api
from tests.gateway.agent_loop import tool_output
from tests.gateway.conftest import RESPONSES_UPSTREAM_KEY as UPSTREAM_KEY
from tests.gateway.conftest import RESPONSES_WINDOW_TOKENS as WINDOW_TOKENS
from tests.gateway.conftest import Gateway
from tests.gateway.responses_loop import (
    INSTRUCTIONS,
    MODEL,
    TOOLS,
    SummarizingResponsesUpstream,
    respond,
    run_stateful,
    run_stateless,
)

pytestmark = pytest.mark.timeout(600)
TURNS = 20


@pytest.fixture
def gateway(responses_gateway: Gateway) -> Gateway:
    return responses_gateway


@pytest.fixture
def upstream(gateway: Gateway) -> SummarizingResponsesUpstream:
    server: SummarizingResponsesUpstream = gateway.upstream  # type: ignore[assignment]
    server.faults.clear()
    return server


def _client(gateway: Gateway) -> openai.OpenAI:
    return openai.OpenAI(base_url=gateway.v1, api_key=gateway.token, max_retries=0, timeout=60)


def _calls(gateway: Gateway, chain_id: int) -> list[dict[str, Any]]:
    return gateway.query(f"list(GatewayCall.objects.filter(chain_id={chain_id}).values('status', 'attempts', "
                         "'response_seq', 'error', 'mode', 'stream'))")


def _fits(request: dict[str, Any]) -> bool:
    from flows.engine import request_tokens

    return request_tokens(request["body"], "responses", model="gpt-4o").prompt <= WINDOW_TOKENS


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_a_stateless_20_turn_agent_stays_in_one_chain_every_request_fits_and_reasoning_goes_back_sealed(
        gateway: Gateway, upstream: SummarizingResponsesUpstream, stream: bool) -> None:
    seen = len(upstream.calls())
    items, chain_ids, responses = run_stateless(_client(gateway), turns=TURNS, task=f"stateless-{stream}",
                                                stream=stream)
    assert len(set(chain_ids)) == 1, chain_ids
    sent = upstream.calls()[seen:]
    assert len(sent) == len(chain_ids)  # no overflow retries: manage mode fitted every request before the call
    assert all(_fits(r) and r["headers"]["Authorization"] == f"Bearer {UPSTREAM_KEY}" for r in sent)
    assert all(r.id.startswith("resp_") and r.id != upstream_id for r, upstream_id in
               zip(responses, [json.loads(r["raw"]).get("id") for r in sent], strict=True))
    # the history outgrew the window, and the upstream verified every encrypted_content it got back
    assert sum(len(json.dumps(i)) for i in items) // 4 > WINDOW_TOKENS
    assert all(c["status"] == "ok" and c["response_seq"] for c in _calls(gateway, chain_ids[0]))
    flow_id = gateway.query(f"Chain.objects.get(pk={chain_ids[0]}).agent.flow_id")
    exported = api(gateway.base, "GET", f"/api/flows/{flow_id}/export?format=responses&chain={chain_ids[0]}",
                   gateway.token)
    assert exported["instructions"] == INSTRUCTIONS
    assert exported["input"] == items  # the agent's own items back, encrypted_content byte for byte


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_a_stateful_20_turn_agent_continues_by_previous_response_id_in_one_chain(
        gateway: Gateway, upstream: SummarizingResponsesUpstream, stream: bool) -> None:
    seen = len(upstream.calls())
    chain_ids, responses = run_stateful(_client(gateway), turns=TURNS, task=f"stateful-{stream}", stream=stream)
    assert len(set(chain_ids)) == 1, chain_ids
    sent = upstream.calls()[seen:]
    assert len(sent) == len(chain_ids)
    # manage mode sends the fitted view as the whole input: the upstream's own state is never relied on
    assert all("previous_response_id" not in r["body"] and _fits(r) for r in sent)
    last = _client(gateway).responses.retrieve(responses[-1].id)
    assert last.id == responses[-1].id and last.output[0].type == responses[-1].output[0].type
    roles = [m["role"] for m in gateway.chain(chain_ids[0])["raw"]]
    assert roles[:2] == ["system", "user"] and roles.count("user") == TURNS
    assert roles.count("assistant") == len(responses)


def test_observe_forwards_the_body_byte_for_byte_and_continues_with_the_upstreams_id(
        gateway: Gateway, upstream: SummarizingResponsesUpstream) -> None:
    body = {"model": MODEL, "input": "  observe   me ", "tools": TOOLS, "x_vendor_field": {"kept": True},
            "truncation": "auto"}
    raw = (json.dumps(body, indent=3) + "\n").encode()
    request = urllib.request.Request(gateway.v1 + "/responses", data=raw, method="POST", headers={
        "Authorization": f"Bearer {gateway.token}", "Content-Type": "application/json", "X-Gateway-Mode": "observe"})
    with urllib.request.urlopen(request, timeout=30) as response:
        first = json.loads(response.read())
    assert upstream.calls()[-1]["raw"] == raw
    theirs = list(upstream.stored)[-1]  # the upstream kept its answer under its own id
    assert first["id"].startswith("resp_") and first["id"] != theirs
    follow, _ = respond(_client(gateway), stream=False, headers={"X-Gateway-Mode": "observe"},
                        previous_response_id=first["id"], input=[{
                            "type": "function_call_output", "call_id": first["output"][0]["call_id"],
                            "output": "22/tcp open ssh"}])
    assert upstream.calls()[-1]["body"]["previous_response_id"] == theirs  # the upstream keeps the state
    assert follow.previous_response_id in (first["id"], None) and follow.output[0].type == "message"


def test_another_users_or_an_unknown_previous_response_id_is_a_404_and_nothing_is_written(
        gateway: Gateway, upstream: SummarizingResponsesUpstream) -> None:
    before = (len(upstream.calls()), gateway.query("GatewayCall.objects.count()"))
    for previous in ("resp_never_issued", "resp_" + "0" * 48):
        with pytest.raises(openai.NotFoundError, match="not found"):
            respond(_client(gateway), stream=False, input="go on", previous_response_id=previous)
    with pytest.raises(openai.BadRequestError, match="never issued"):
        respond(_client(gateway), stream=False, input=[{"type": "function_call_output", "call_id": "call_ghost",
                                                        "output": "?"}])
    assert (len(upstream.calls()), gateway.query("GatewayCall.objects.count()")) == before


def _bulky_input(rounds: int, label: str = "") -> list[dict[str, Any]]:
    # a label per test keeps two tests' requests apart: the same input twice is a retry of the first call
    items: list[dict[str, Any]] = [{"role": "user", "content": f"overflow check {label}".strip()}]
    for turn in range(rounds):
        items += [{"type": "function_call", "call_id": f"call_o{turn}", "name": "run_command",
                   "arguments": json.dumps({"cmd": f"nmap {turn}"})},
                  {"type": "function_call_output", "call_id": f"call_o{turn}", "output": tool_output("nmap", turn)},
                  {"role": "user", "content": f"continue {turn}"}]
    return items


@pytest.mark.parametrize("stream", [False, True], ids=["error-status", "response.failed-in-stream"])
def test_an_overflow_is_compacted_and_retried_also_when_reported_inside_a_stream(
        gateway: Gateway, upstream: SummarizingResponsesUpstream, stream: bool) -> None:
    if stream:
        upstream.faults.append("failed_overflow")
    seen = len(upstream.calls())
    response, chain_id = respond(_client(gateway), stream=stream, headers={"X-Gateway-Mode": "observe"},
                                 input=_bulky_input(10, f"stream={stream}"), store=False)
    assert response.status == "completed" and response.output[0].type == "function_call"
    sent = upstream.calls()[seen:]
    assert len(sent) == 2 and not _fits(sent[0]) and _fits(sent[1])
    call = _calls(gateway, chain_id)[-1]
    assert call["attempts"] == 2 and call["status"] == "ok"


def test_a_stream_that_ends_before_response_completed_is_an_error_event_and_nothing_is_appended(
        gateway: Gateway, upstream: SummarizingResponsesUpstream) -> None:
    upstream.faults.append("cut")
    with pytest.raises(RuntimeError, match="response.completed"):
        respond(_client(gateway), stream=True, input="cut me short", store=False)
    chain_id = gateway.query("GatewayCall.objects.order_by('-pk').values_list('chain_id', flat=True).first()")
    call = _calls(gateway, chain_id)[-1]
    assert call["status"] == "failed" and call["response_seq"] is None and "response.completed" in call["error"]
    assert [m["role"] for m in gateway.chain(chain_id)["raw"]] == ["system", "user"]


def test_a_malformed_request_is_an_openai_error_never_a_500(gateway: Gateway) -> None:
    for raw, code in ((b"{", "invalid_json"), (b'{"model": "m"}', "invalid_input"),
                      (b'{"model": "m", "input": "x", "previous_response_id": 5}', "invalid_previous_response_id")):
        request = urllib.request.Request(gateway.v1 + "/responses", data=raw, method="POST", headers={
            "Authorization": f"Bearer {gateway.token}", "Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(request, timeout=30)
        assert info.value.code == 400 and json.loads(info.value.read())["error"]["code"] == code


def test_the_openai_agents_sdk_runs_a_tool_loop_through_the_gateway_in_both_state_styles(
        gateway: Gateway, upstream: SummarizingResponsesUpstream) -> None:
    agents = pytest.importorskip("agents")
    from openai import AsyncOpenAI

    agents.set_tracing_disabled(True)
    ran: list[str] = []

    @agents.function_tool
    def run_command(cmd: str) -> str:
        """Run a shell command on the attack box."""
        ran.append(cmd)
        return tool_output(cmd, len(ran))

    client = AsyncOpenAI(base_url=gateway.v1, api_key=gateway.token, max_retries=0, timeout=60)
    agent = agents.Agent(name="pentester", instructions=INSTRUCTIONS, tools=[run_command],
                         model=agents.OpenAIResponsesModel(model=MODEL, openai_client=client))
    seen = len(upstream.calls())
    first = agents.Runner.run_sync(agent, "agents-sdk: scan 10.10.5.23")
    second = agents.Runner.run_sync(agent, "agents-sdk: and the next range",
                                    previous_response_id=first.last_response_id)
    assert ran and "done" in str(first.final_output) and "done" in str(second.final_output)
    assert first.last_response_id.startswith("resp_") and len(upstream.calls()) - seen == 4
    chain_ids = {int(c) for c in gateway.query(
        "sorted(set(GatewayCall.objects.order_by('-pk').values_list('chain_id', flat=True)[:4]))")}
    assert len(chain_ids) == 1  # the stateless first run and its stateful continuation: one chain
