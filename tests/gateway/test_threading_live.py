"""Threading through the real server: parallel agents, a rewritten history, concurrent calls of one agent."""
from __future__ import annotations

import asyncio
import threading
from typing import Any

import openai
import pytest

from tests.gateway.agent_loop import SYSTEM, TOOLS, run_agent
from tests.gateway.conftest import Gateway
from tests.gateway.upstream_fake import MODEL

pytestmark = pytest.mark.timeout(300)


def _client(gateway: Gateway) -> openai.OpenAI:
    return openai.OpenAI(base_url=gateway.v1, api_key=gateway.token, max_retries=0, timeout=60)


def _raw(gateway: Gateway, chain_id: int) -> list[tuple[str, Any]]:
    return [(m["role"], m.get("content")) for m in gateway.chain(chain_id)["raw"]]


def test_two_agents_at_once_stay_in_their_own_chains(gateway: Gateway) -> None:
    results: dict[str, tuple[list[dict[str, Any]], list[int]]] = {}

    def agent(name: str) -> None:
        results[name] = run_agent(_client(gateway), turns=4, task=f"parallel agent {name}")

    threads = [threading.Thread(target=agent, args=(name,)) for name in ("alpha", "beta")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=240)
    (history_a, ids_a), (history_b, ids_b) = results["alpha"], results["beta"]
    assert len(set(ids_a)) == 1 and len(set(ids_b)) == 1 and ids_a[0] != ids_b[0]
    for history, ids in ((history_a, ids_a), (history_b, ids_b)):
        assert [r for r, _ in _raw(gateway, ids[0])] == [m["role"] for m in history]
        assert all(c is None or "parallel agent" not in c or history[1]["content"].split(":")[0] in c
                   for _, c in _raw(gateway, ids[0]) if isinstance(c, str))


def test_a_rewritten_history_continues_in_a_successor_chain(gateway: Gateway) -> None:
    history, ids = run_agent(_client(gateway), turns=2, task="rewriter")
    first = ids[0]
    rewritten = [history[0], history[1],
                 {"role": "assistant", "content": "Summary of my work so far: two scans of 10.10.5.23."},
                 {"role": "user", "content": "rewriter: go on from the summary"}]
    raw = _client(gateway).chat.completions.with_raw_response.create(model=MODEL, messages=rewritten, tools=TOOLS)
    successor = int(raw.headers["X-Chain-Id"])
    assert successor != first
    links = gateway.query(f"list(Chain.objects.filter(pk__in=[{first}, {successor}]).order_by('pk')"
                          ".values_list('pk', 'is_active', 'parent_id'))")
    assert links == [[first, False, None], [successor, True, first]]
    events = gateway.query(f"list(SummaryEvent.objects.filter(chain_id={successor}, trigger='client-rewrite')"
                           ".values_list('reason', flat=True))")
    assert len(events) == 1 and f"#{first}" in events[0]
    assert len(_raw(gateway, first)) == len(history)  # the old chain is kept unchanged
    assert [r for r, _ in _raw(gateway, successor)] == ["system", "user", "assistant", "user", "assistant"]


def test_concurrent_calls_of_one_agent_never_interleave(gateway: Gateway) -> None:
    base = [{"role": "system", "content": SYSTEM + " (concurrency)"}, {"role": "user", "content": "start"}]
    raw = _client(gateway).chat.completions.with_raw_response.create(model=MODEL, messages=base, tools=TOOLS)
    answer = raw.parse().choices[0].message.model_dump(exclude_none=True)
    history = base + [answer, {"role": "tool", "tool_call_id": answer["tool_calls"][0]["id"], "content": "ok"}]
    gateway.upstream.faults[:] = ["slow", "slow"]

    async def both() -> list[Any]:
        client = openai.AsyncOpenAI(base_url=gateway.v1, api_key=gateway.token, max_retries=0, timeout=60)
        return await asyncio.gather(*[client.chat.completions.with_raw_response.create(
            model=MODEL, messages=history + [{"role": "user", "content": f"branch {b}"}], tools=TOOLS)
            for b in ("A", "B")])

    responses = asyncio.run(both())
    chain_ids = {int(r.headers["X-Chain-Id"]) for r in responses}
    for chain_id in chain_ids:
        contents = [c for _, c in _raw(gateway, chain_id)]
        assert not ("branch A" in contents and "branch B" in contents)
    assert {"branch A", "branch B"} <= {c for cid in chain_ids for _, c in _raw(gateway, cid)}


def test_the_async_client_streams_through_the_gateway(gateway: Gateway) -> None:
    async def run() -> tuple[str, int]:
        client = openai.AsyncOpenAI(base_url=gateway.v1, api_key=gateway.token, max_retries=0, timeout=60)
        messages = [{"role": "system", "content": "async streamer"}, {"role": "user", "content": "hello"}]
        raw = await client.chat.completions.with_raw_response.create(
            model=MODEL, messages=messages, tools=TOOLS, stream=True, stream_options={"include_usage": True})
        arguments, usage = "", 0
        async for chunk in raw.parse():  # type: ignore[attr-defined]
            if chunk.usage is not None:
                usage = chunk.usage.prompt_tokens
            for choice in chunk.choices:
                for part in choice.delta.tool_calls or []:
                    arguments += (part.function.arguments or "") if part.function else ""
        return arguments, usage

    arguments, usage = asyncio.run(run())
    assert "nmap" in arguments and usage > 0


def test_models_lists_the_upstream_models_with_their_window(gateway: Gateway) -> None:
    models = _client(gateway).models.list()
    found = {m.id: m.model_extra.get("context_window") for m in models.data}  # type: ignore[union-attr]
    assert found.get(MODEL) == 6000
