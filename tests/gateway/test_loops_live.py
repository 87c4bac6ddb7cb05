"""Agent loops against `manage.py run`: a model that keeps asking for one tool call is flagged on the chain."""
from __future__ import annotations

import uuid
from typing import Any

import openai
import pytest

from tests.flows.pipeline_live import api
from tests.gateway.agent_loop import TOOLS
from tests.gateway.conftest import Gateway
from tests.gateway.upstream_fake import MODEL

pytestmark = pytest.mark.timeout(300)


def _turn(client: openai.OpenAI, history: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    raw = client.chat.completions.with_raw_response.create(model=MODEL, messages=history,  # type: ignore[arg-type]
                                                           tools=TOOLS)  # type: ignore[arg-type]
    answer = raw.parse().choices[0].message.model_dump(exclude_none=True)
    history = [*history, answer]
    for call in answer.get("tool_calls") or []:
        history.append({"role": "tool", "tool_call_id": call["id"], "content": "root:x:0:0:root:/root:/bin/sh"})
    return history, int(raw.headers["X-Chain-Id"])


def test_the_same_tool_call_three_times_in_a_row_is_one_agent_loop_in_the_api(gateway: Gateway) -> None:
    client = openai.OpenAI(base_url=gateway.v1, api_key=gateway.token, max_retries=0, timeout=60,
                           default_headers={"X-Session-Id": f"loop-{uuid.uuid4()}"})
    history: list[dict[str, Any]] = [{"role": "system", "content": "# SENIOR PENETRATION TESTING EXPERT\n\ngo"},
                                     {"role": "user", "content": "read the password file"}]
    gateway.upstream.faults.extend(["same_call"] * 3)
    for _ in range(4):  # three identical calls, then a turn whose admission waits for the third one's record
        history, chain_id = _turn(client, history)
    chain = api(gateway.base, "GET", f"/api/chains/{chain_id}", gateway.token)
    assert chain["loops"] == 1, chain["agent_loops"]
    loop = chain["agent_loops"][0]
    assert (loop["tool_name"], loop["repeats"], loop["in_a_row"]) == ("run_command", 3, True)
    assert "/etc/passwd" in loop["arguments"] and loop["call_id"]
