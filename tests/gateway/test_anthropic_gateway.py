"""The official `anthropic` SDK through the gateway (`manage.py run`) to a scripted Anthropic upstream that
enforces the API's rules (window, signed thinking unchanged, tool pairs), in observe and manage mode: tool loops,
byte-for-byte observe and the export, unknown and bad blocks, broken streams, sessions, count_tokens, rewrites
and hang-ups (faults and overflow recovery: test_anthropic_faults.py)."""
from __future__ import annotations

import copy
import json
import uuid
from typing import Any

import anthropic
import pytest

from flows.engine import messages_to_anthropic
from tests.flows.pipeline_live import api
from tests.gateway.anthropic_stand import KEY, MODEL, SYSTEM, THINKING, TOOLS, UPSTREAM_WINDOW, Stand, post, turn
from tests.gateway.upstream_base import TRICKLE_SECONDS

pytestmark = pytest.mark.timeout(600)

@pytest.fixture
def stand(anthropic_stand: Stand) -> Stand:
    return anthropic_stand  # one server for the package's Anthropic tests (tests/gateway/conftest.py)


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_a_20_turn_tool_loop_with_thinking_stays_in_one_chain_and_every_request_keeps_the_rules(
        stand: Stand, stream: bool) -> None:
    client = stand.client("manage")
    seen = len(stand.upstream.requests)
    messages: list[Any] = [{"role": "user", "content": f"scan the 10.10.5.0/24 range ({stream})"}]
    chains = {turn(client, messages, stream=stream) for _ in range(20)}
    assert len(chains) == 1
    sent = [r for r in stand.upstream.requests[seen:] if r["body"].get("tools")]
    assert len(sent) >= 20
    assert len(json.dumps(messages)) > 4 * UPSTREAM_WINDOW  # the history itself would not fit: compaction ran
    assert any(len(r["body"]["messages"]) < len(messages) - 1 for r in sent[-3:])
    assert all(r["headers"].get("x-api-key") == KEY and "anthropic-version" in r["headers"] for r in sent)
    stored = stand.settled(chains.pop())["raw"]
    assert len(stored) == len(messages)  # the system, then every message once but the last (not sent yet)


def test_observe_forwards_the_body_byte_for_byte_and_the_stored_chain_exports_the_blocks(stand: Stand) -> None:
    """Two calls of a tool round; the flow's export in the `anthropic` format (the API's download) gives back the
    system and every turn as the agent and the upstream wrote them: signed thinking, tool_use, a tool_result
    with block content and is_error, cache_control markers, the answer's text."""
    messages: list[Any] = [{"role": "user", "content": [{"type": "text", "text": "observe 10.1.1.1",
                                                         "cache_control": {"type": "ephemeral"}}]}]
    body = {"model": MODEL, "max_tokens": 512, "system": SYSTEM, "tools": TOOLS, "thinking": THINKING,
            "messages": messages, "metadata": {"user_id": "u-1"}, "x_vendor": {"kept": True}}
    for path in ("/v1/messages", "/v1/messages?beta=true"):  # the SDKs' beta namespace adds the query
        raw = (json.dumps({**body, "messages": messages}, indent=3) + "\n").encode()
        status, headers, answer = post(stand, path, raw, mode="observe", **{"anthropic-beta": "context-1m-2025"})
        asked = stand.upstream.requests[-1]
        assert status == 200 and asked["raw"] == raw and asked["path"] == path
        assert asked["headers"]["anthropic-beta"] == "context-1m-2025" and asked["headers"]["x-api-key"] == KEY
        reply = json.loads(answer)
        assert reply["content"][0]["type"] == "thinking" and reply["content"][0]["signature"]
        messages.append({"role": "assistant", "content": reply["content"]})
        if reply["content"][-1]["type"] == "tool_use":
            messages.append({"role": "user", "content": [{
                "type": "tool_result", "tool_use_id": reply["content"][-1]["id"], "is_error": True,
                "content": [{"type": "text", "text": "nmap: host <10.1.1.1> seems down"}]}]})
    chain_id = int(headers["X-Chain-Id"])
    stand.settled(chain_id)
    exported = api(stand.base, "GET", f"/api/flows/{headers['X-Flow-Id']}/export?format=anthropic&chain={chain_id}",
                   stand.token)
    assert exported == {"system": SYSTEM, "messages": messages}
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant"]


def test_an_unknown_block_type_reaches_the_upstream_verbatim_and_is_stored_verbatim_in_manage_mode(
        stand: Stand) -> None:
    unknown = {"type": "hologram_2031", "payload": {"z": [1, 2]}, "cache_control": {"type": "ephemeral"}}
    messages: list[Any] = [{"role": "user", "content": [unknown, {"type": "text", "text": "what is on 10.8.8.8?"}]}]
    raw = stand.client("manage").messages.with_raw_response.create(model=MODEL, max_tokens=256, system=SYSTEM,
                                                                    messages=messages)  # type: ignore[arg-type]
    reply = raw.parse()
    assert stand.upstream.requests[-1]["body"]["messages"][0] == messages[0]
    stored = stand.settled(int(raw.headers["X-Chain-Id"]))["raw"]
    assert messages_to_anthropic(stored)["messages"] == [
        *messages, {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in reply.content]}]


@pytest.mark.parametrize("content,needle", [
    ([{"type": "tool_result", "tool_use_id": "toolu_never", "content": "x"}], "never issued"),
    ([{"type": "text", "text": "hi"}, {"type": "thinking", "thinking": "t"}], "thinking"),
])
def test_bad_blocks_are_an_anthropic_400_and_nothing_is_written(stand: Stand, content: Any, needle: str) -> None:
    flows = stand.query("Flow.objects.count()")
    turns = [{"role": "user", "content": "go"}, {"role": "assistant", "content": content}] \
        if needle == "thinking" else [{"role": "user", "content": content}]
    raw = json.dumps({"model": MODEL, "max_tokens": 64, "messages": turns}).encode()
    status, _headers, body = post(stand, "/v1/messages", raw)
    error = json.loads(body)
    assert status == 400 and error["type"] == "error" and error["error"]["type"] == "invalid_request_error"
    assert needle in error["error"]["message"]
    assert stand.query("Flow.objects.count()") == flows


@pytest.mark.parametrize("fault", ["cut", "garbage"])
def test_a_broken_stream_ends_with_an_anthropic_error_event_and_nothing_is_appended(stand: Stand,
                                                                                     fault: str) -> None:
    stand.upstream.faults.append(fault)
    raw = json.dumps({"model": MODEL, "max_tokens": 64, "stream": True, "system": "s",
                      "messages": [{"role": "user", "content": f"broken {fault} 10.3.3.3"}]}).encode()
    status, headers, body = post(stand, "/v1/messages", raw)
    assert status == 200 and body.rstrip().endswith(b"}")
    last = body.strip().split(b"\n\n")[-1]
    assert last.startswith(b"event: error\n") and json.loads(last.split(b"data: ", 1)[1])["type"] == "error"
    chain = stand.settled(int(headers["X-Chain-Id"]))
    assert [m["role"] for m in chain["raw"]] == ["system", "user"]
    call = stand.query(f"list(GatewayCall.objects.filter(chain_id={chain['id']}).values_list('status', flat=True))")
    assert call == ["failed"]
    error = stand.query(f"GatewayCall.objects.get(chain_id={chain['id']}).error")
    assert ("message_stop" if fault == "cut" else "message_start") in error


ROLES = {"pentester": "# SENIOR PENETRATION TESTING EXPERT\n\nYou test the authorized targets you are given.",
         "searcher": "# WEB INFORMATION RETRIEVAL AGENT\n\nYou find facts quickly and cite them."}


@pytest.mark.parametrize("where", ["header", "url"])
def test_a_session_makes_one_flow_whose_agents_are_named_by_their_system_prompts(stand: Stand, where: str) -> None:
    """Sessions and agents as for Chat Completions: the session in a header or in the SDK's base URL, the agent
    type from the title of Anthropic's top-level `system`; each agent's tool round stays in its one chain."""
    session = f"anth-{where}-{uuid.uuid4().hex}"
    client = anthropic.Anthropic(base_url=f"{stand.base}/s/{session}" if where == "url" else stand.base,
                                 api_key=stand.token, max_retries=0, timeout=60,
                                 default_headers={"X-Gateway-Mode": "observe"} | (
                                     {"X-Session-Id": session} if where == "header" else {}))
    flows, chains = set(), {}
    for role, system in ROLES.items():
        messages: list[Any] = [{"role": "user", "content": f"{role} task {session}"}]
        for _call in range(2):  # the tool call, then the answer to its result
            raw = client.messages.with_raw_response.create(model=MODEL, max_tokens=256, system=system, tools=TOOLS,
                                                           messages=messages)  # type: ignore[arg-type]
            answer = raw.parse()
            flows.add(int(raw.headers["X-Flow-Id"]))
            chains.setdefault(role, set()).add(int(raw.headers["X-Chain-Id"]))
            messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in answer.content]})
            if answer.stop_reason == "tool_use":
                messages.append({"role": "user", "content": [{"type": "tool_result", "content": "22/tcp open",
                                                              "tool_use_id": answer.content[-1].id}]})
    assert len(flows) == 1 and all(len(ids) == 1 for ids in chains.values())
    flow = api(stand.base, "GET", f"/api/flows/{flows.pop()}", stand.token)
    assert flow["session_id"] == session
    assert {agent["agent_type"] for agent in flow["agents"]} == set(ROLES)


def test_count_tokens_forwards_to_the_upstream_endpoint(stand: Stand) -> None:
    counted = stand.client().messages.count_tokens(model=MODEL, system=SYSTEM, tools=TOOLS,  # type: ignore
                                                   messages=[{"role": "user", "content": "count me"}])
    asked = stand.upstream.requests[-1]
    assert asked["path"].startswith("/v1/messages/count_tokens") and counted.input_tokens > 100


def test_a_rewritten_history_continues_in_a_successor_chain_with_a_rewrite_event(stand: Stand) -> None:
    client = stand.client("observe")
    messages: list[Any] = [{"role": "user", "content": "rewrite test on 10.4.4.4"}]
    first = turn(client, messages, stream=False)
    turn(client, messages, stream=False)
    compacted = [messages[0], {"role": "assistant", "content": "Summary: 10.4.4.4 has 22/tcp open."},
                 {"role": "user", "content": "continue"}]
    second = turn(client, copy.deepcopy(compacted), stream=False)
    assert second != first
    events = stand.query(f"list(SummaryEvent.objects.filter(chain_id={second}).values_list('trigger', flat=True))")
    assert "client-rewrite" in events


def test_a_client_that_hangs_up_mid_stream_cancels_the_upstream_call(stand: Stand) -> None:
    """The upstream holds its stream open with pings for half a minute; the SDK client reads the first event
    and closes: the upstream sees its own connection closed long before its stream would end."""
    stand.upstream.faults.append("trickle")
    ended = len(stand.upstream.stream_ends)
    with stand.client("observe").messages.with_streaming_response.create(
            model=MODEL, max_tokens=64, stream=True, system="s",
            messages=[{"role": "user", "content": "hang up on 10.7.7.7"}]) as response:
        chain_id = int(response.headers["X-Chain-Id"])
        assert next(response.iter_lines()).startswith("event: message_start")
    assert stand.upstream.wait_stream_end(ended, timeout=TRICKLE_SECONDS) == "closed"
    chain = stand.settled(chain_id)
    calls = stand.query(f"list(GatewayCall.objects.filter(chain_id={chain_id}).values('status', 'error'))")
    assert [c["status"] for c in calls] == ["cancelled"] and "hung up" in calls[0]["error"]
    assert [m["role"] for m in chain["raw"]] == ["system", "user"]  # no half answer appended
