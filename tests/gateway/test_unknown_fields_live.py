"""Issue 26 item 7, live: `manage.py run` in manage mode behind the scripted upstream, driven with the official
`openai` SDK. The message fields the chain has no column for reach the upstream, are stored, and export back."""
from __future__ import annotations

import json
from typing import Any

import openai
import pytest

from tests.flows.pipeline_live import api
from tests.gateway.agent_loop import TOOLS
from tests.gateway.conftest import Gateway
from tests.gateway.upstream_fake import MODEL

pytestmark = pytest.mark.timeout(300)

CACHED = {"type": "ephemeral"}


def _history(task: str) -> list[dict[str, Any]]:
    return [{"role": "system", "content": "You are a pentest agent.", "cache_control": CACHED},
            {"role": "user", "content": f"{task}: start", "name": "operator"},
            {"role": "assistant", "content": "Planning.", "reasoning_content": "the host first",
             "x_vendor": {"trace": [1, 2]}},
            {"role": "user", "content": f"{task}: scan the host", "cache_control": CACHED}]


def _call(gateway: Gateway, messages: list[dict[str, Any]]) -> tuple[dict[str, Any], int]:
    client = openai.OpenAI(base_url=gateway.v1, api_key=gateway.token, max_retries=0, timeout=60)
    raw = client.chat.completions.with_raw_response.create(
        model=MODEL, messages=messages, tools=TOOLS, extra_headers={"X-Gateway-Mode": "manage"})  # type: ignore[arg-type]
    return raw.parse().choices[0].message.model_dump(exclude_none=True), int(raw.headers["X-Chain-Id"])


def _unchanged(sent: list[dict[str, Any]], agent: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The upstream's messages that the fit sent unchanged (PentAGI's passes may summarize the others), each
    checked to be the agent's message with every field as sent."""
    by_text = {(m["role"], json.dumps(m.get("content"))): m for m in agent}
    kept = [m for m in sent if (m["role"], json.dumps(m.get("content"))) in by_text]
    assert all(m == by_text[(m["role"], json.dumps(m.get("content")))] for m in kept), (kept, agent)
    return kept


def test_manage_mode_sends_stores_and_exports_unknown_message_fields(gateway: Gateway) -> None:
    history = _history("unknown fields")
    seen = len(gateway.upstream.requests)
    answer, chain_id = _call(gateway, history)
    first = _unchanged(gateway.upstream.requests[seen]["body"]["messages"], history)
    assert first[0] == history[0] and first[-1] == history[-1]  # the system prompt and the newest turn as sent

    # the agent moves its cache breakpoint to the newest message: upstream gets the breakpoints as sent now
    resent = [{k: v for k, v in m.items() if k != "cache_control"} if i == 3 else m for i, m in enumerate(history)]
    call_id = answer["tool_calls"][0]["id"]
    later = [*resent, {"role": "assistant", "content": None, "tool_calls": answer["tool_calls"]},
             {"role": "tool", "tool_call_id": call_id, "content": "22/tcp open ssh", "cache_control": CACHED}]
    _, same_chain = _call(gateway, later)
    assert same_chain == chain_id  # the fields never made the resend look like a rewritten history
    second = _unchanged(gateway.upstream.requests[seen + 1]["body"]["messages"], later)
    assert second[0] == later[0] and second[-1] == later[-1] and later[3] in second

    raw = gateway.chain(chain_id)["raw"]
    stored = [{k: v for k, v in m.items() if k not in ("seq", "byte_size", "token_count", "created_at")}
              for m in raw]
    assert stored[:4] == history  # the first sighting of each message is what the chain keeps
    assert stored[5] == later[5]
    flow_id = gateway.query(f"Chain.objects.get(pk={chain_id}).agent.flow_id")
    exported = api(gateway.base, "GET", f"/api/flows/{flow_id}/export?format=openai&chain={chain_id}", gateway.token)
    assert exported[:4] == history and exported[5] == later[5]
    assert json.dumps(exported).count("reasoning_content") == 1
