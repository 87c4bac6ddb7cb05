"""Prompt caching through the gateway's manage mode: the cache-read tokens an Anthropic upstream reports over a
20-turn tool loop, with compaction (a small window) and without (a window the history never fills).

Starts the tests' scripted Anthropic upstream (tests/gateway/upstream_anthropic.py: it counts prompt caching
as Anthropic does, one cache entry per breakpoint prefix, the read the longest prefix an earlier request
marked) and a real `manage.py run --no-demo` (bench/server_harness.py). The upstream is a named, non-default
Anthropic provider, so the product's own summaries use the offline extractive summarizer. An agent (the
`anthropic` SDK, thinking on, one tool, every turn a tool call and its ~2,400-token result) runs 20 turns in
manage mode, in two caching styles: a breakpoint on the system prompt only, and also on its newest message (as
Claude Code does), under the `window` strategy with a small window and a large one, and under PentAGI's
passes. Prints, per run, the compactions the upstream saw (distinct summaries), the requests it answered, the
tokens it read from the cache, wrote to it and got uncached, and the share of the prompt read from the cache
from the first compaction on. Token counts: the machine's load does not change them.
Usage: .venv/bin/python bench/anthropic_cache.py [--turns 20] [--small-window 9000]
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import anthropic

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))
from server_harness import HOST, Server  # noqa: E402

from tests.gateway.upstream_anthropic import AnthropicUpstream  # noqa: E402

KEY = "sk-ant-bench"
PROVIDER = "bench-anth"
LARGE_WINDOW = 200_000
# the window strategy compacts only when the view would not fit (small window: it does; large: never);
# PentAGI's passes rotate the newest section after every turn, whatever the window
RUNS = (("window", ("claude-small", "claude-large")), ("pentagi", ("claude-small",)))
EPHEMERAL = {"type": "ephemeral"}
SYSTEM_TEXT = "You are a penetration tester on an authorised engagement. " * 20
TOOLS = [{"name": "terminal", "description": "run a shell command",
          "input_schema": {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]}}]
THINKING = {"type": "enabled", "budget_tokens": 1024}
RESULT = "PORT STATE SERVICE\n" + "".join(f"{p}/tcp open ssh OpenSSH 8.9p1 Ubuntu 3ubuntu0.{p}\n" for p in range(120))


def with_last_breakpoint(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages with a breakpoint on the newest message's last block (the agent's own, Claude Code style)."""
    last = messages[-1]
    blocks = [{"type": "text", "text": last["content"]}] if isinstance(last["content"], str) else last["content"]
    return [*messages[:-1], {**last, "content": [*blocks[:-1], {**blocks[-1], "cache_control": EPHEMERAL}]}]


def run(server: Server, upstream: AnthropicUpstream, model: str, style: str, turns: int) -> dict[str, Any]:
    """One agent's tool loop; what the upstream reported for its requests."""
    client = anthropic.Anthropic(base_url=server.url, api_key=server.token, max_retries=0, timeout=120,
                                 default_headers={"X-Gateway-Mode": "manage"})
    system = [{"type": "text", "text": SYSTEM_TEXT, "cache_control": EPHEMERAL}]
    messages: list[dict[str, Any]] = [{"role": "user", "content": f"scan 10.10.5.0/24 ({model}, {style})"}]
    first = len(upstream.cache_log)
    for _ in range(turns):
        sent = with_last_breakpoint(messages) if style == "system+last" else messages
        answer = client.messages.create(model=f"{PROVIDER}/{model}", max_tokens=1024, system=system,  # type: ignore
                                        tools=TOOLS, thinking=THINKING, messages=sent)  # type: ignore
        messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in answer.content]})
        calls = [b for b in answer.content if b.type == "tool_use"]
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": b.id, "content": f"$ {b.input['cmd']}\n{RESULT}"}  # type: ignore
            for b in calls]} if calls else {"role": "user", "content": f"next host: 10.10.5.{len(messages)}"})
    log = upstream.cache_log[first:]
    compacted = next((i for i, e in enumerate(log) if e["summary"]), len(log))
    after = log[compacted:]
    prompt_after = sum(e["read"] + e["written"] + e["input"] for e in after)
    return {"model": model, "style": style, "requests": len(log), "read": sum(e["read"] for e in log),
            "written": sum(e["written"] for e in log), "uncached": sum(e["input"] for e in log),
            "compactions": len({e["summary"] for e in log if e["summary"]}),
            "share_after": sum(e["read"] for e in after) / prompt_after if prompt_after else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=20, help="agent turns per run (default 20)")
    parser.add_argument("--small-window", type=int, default=9000, help="the compacting run's window (default 9000)")
    args = parser.parse_args()
    for key in ("LLM_SERVER_URL", "ANTHROPIC_SERVER_URL", "ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        os.environ.pop(key, None)
    upstream = AnthropicUpstream(window_tokens=LARGE_WINDOW, api_key=KEY)
    rows = []
    try:
        for strategy, models in RUNS:
            os.environ["COMPACTION_STRATEGY"] = strategy
            with Server(db="sqlite", layer="embedded") as server:
                server._manage("shell", "-c", "from flows.models import ProviderConfig, ModelWindow\n"
                               f"ProviderConfig.objects.create(name={PROVIDER!r}, kind='anthropic', "
                               f"base_url='http://{HOST}:{upstream.port}', api_key={KEY!r})\n"
                               f"ModelWindow.objects.create(model='claude-small', context_window={args.small_window})\n"
                               f"ModelWindow.objects.create(model='claude-large', context_window={LARGE_WINDOW})")
                for style in ("system", "system+last"):
                    for model in models:
                        rows.append({"strategy": strategy, **run(server, upstream, model, style, args.turns)})
                        print(f"done {strategy} {model} {style}", file=sys.stderr, flush=True)
    finally:
        upstream.close()
    print("| strategy | agent's breakpoints | window | compactions | requests | cache read | cache written "
          "| uncached input | cache read share after the first compaction |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        window = args.small_window if r["model"] == "claude-small" else LARGE_WINDOW
        share = f"{r['share_after']:.0%}" if r["share_after"] is not None else "(none)"
        print(f"| {r['strategy']} | {r['style']} | {window:,} | {r['compactions']} | {r['requests']} | {r['read']:,} "
              f"| {r['written']:,} | {r['uncached']:,} | {share} |")


if __name__ == "__main__":
    main()
