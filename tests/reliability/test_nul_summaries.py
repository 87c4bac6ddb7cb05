"""Issue 26 item 2: a NUL in a tool output never breaks a chain's summaries, on either deployment.

Found on PostgreSQL: the API accepts NUL in content (the message columns escape it), but the summary derived from
it did not: every later summarization failed with `DataError: PostgreSQL text fields cannot contain NUL`. Here
an oversized tool result holding NUL is summarized by the offline summarizer (it quotes the text), and the event
must end OK with the view saved; a second turn must summarize too.
"""
from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Iterator

import pytest

from tests.reliability.deployments import DEPLOYMENTS, Deployment, deployment, post

pytestmark = pytest.mark.services
WAIT_SECONDS = 60


@pytest.fixture(scope="module", params=DEPLOYMENTS)
def served(request, tmp_path_factory) -> Iterator[Deployment]:
    with deployment(request.param, tmp_path_factory.mktemp(request.param), worker=True) as d:
        yield d


def _api(served: Deployment, method: str, path: str, body: object = None) -> dict:
    status, answer = post(served.base, path, json.dumps(body).encode() if body is not None else b"", {
        "Authorization": f"Bearer {served.token}", "Content-Type": "application/json"}, method=method)
    assert status < 300, (status, answer[:500])
    return json.loads(answer)


def _events(served: Deployment, chain_id: int) -> list[dict]:
    request = urllib.request.Request(f"{served.base}/api/chains/{chain_id}/events",
                                     headers={"Authorization": f"Bearer {served.token}"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())["events"]


def _wait_finished(served: Deployment, chain_id: int, count: int) -> list[dict]:
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        events = [e for e in _events(served, chain_id) if e["outcome"] != "running"]
        if len(events) >= count or time.monotonic() > deadline:
            return events
        time.sleep(0.2)  # polling the outcome, not waiting for it to happen


def _logs(served: Deployment) -> str:
    return served.log()[-1500:] + served.stack.log("worker")[-3000:]


def _turn(n: int) -> list[dict]:
    call_id = f"call_{n:024d}"
    noisy = ("line of output \x00 with a NUL\n" * 1200)  # ~36 KB: over max_bp_bytes, so it is summarized
    return [
        {"role": "user", "content": f"scan host {n}"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": "terminal", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": call_id, "content": noisy},
        {"role": "assistant", "content": f"host {n} answered with NUL bytes"},
    ]


def test_a_nul_in_a_tool_output_is_summarized_and_the_chain_keeps_summarizing(served):
    flow = _api(served, "POST", "/api/flows", {"title": "nul"})
    chain_id = _api(served, "POST", f"/api/flows/{flow['id']}/agents", {"agent_type": "pentester"})["chain_id"]
    _api(served, "POST", f"/api/chains/{chain_id}/messages",
         {"messages": [{"role": "system", "content": "You are a pentester."}, *_turn(1)]})
    first = _wait_finished(served, chain_id, 1)
    assert first and all(e["outcome"] == "ok" for e in first), (first, _logs(served))
    _api(served, "POST", f"/api/chains/{chain_id}/messages", {"messages": _turn(2)})
    both = _wait_finished(served, chain_id, 2)
    assert len(both) >= 2 and all(e["outcome"] == "ok" for e in both), (both, _logs(served))
    raw = _api(served, "GET", f"/api/chains/{chain_id}/messages?after_seq=0")["messages"]
    assert "\x00" in raw[3]["content"]  # the raw chain keeps its NUL exactly; only derived text is made safe
