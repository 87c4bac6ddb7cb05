"""Chains and summarizers for the pipeline tests (not fixtures: plain helpers the test modules import)."""
from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from typing import Any

from flows.ingest import chain_append
from flows.models import Chain, SummarizerSettings
from flows.pipeline import set_summarizer_factory
from tests.fakes import FakeSummarizer

# Small budgets (at the model's validator minimums) so a few turns of ~1 KB tool output get summarized.
SMALL_BUDGETS = {"last_sec_bytes": 2048, "max_bp_bytes": 1024, "max_qa_sections": 2, "max_qa_bytes": 4096,
                 "keep_qa_sections": 1, "identifier_policy": "off"}


def call_id(turn: int) -> str:
    return "call_" + hashlib.sha256(str(turn).encode()).hexdigest()[:24]


def turn(index: int, *, output_bytes: int = 900) -> list[dict[str, Any]]:
    """One agent turn: a user ask, a tool call, its (long) result, a final answer."""
    cid = call_id(index)
    host = f"10.0.{index // 250}.{index % 250 + 1}"
    line = f"port {index}/tcp open ssh on {host} sha {hashlib.md5(str(index).encode()).hexdigest()}\n"
    return [
        {"role": "user", "content": f"task {index}: scan host {host} and report open ports"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": "terminal",
                                                        "arguments": f'{{"input": "nmap -sV {host}"}}'}}]},
        {"role": "tool", "tool_call_id": cid, "content": (line * (output_bytes // len(line) + 1))[:output_bytes]},
        {"role": "assistant", "content": f"Host {host} has ssh open (turn {index})."},
    ]


def grow(chain: Chain, turns: range, *, system: bool = True, output_bytes: int = 900) -> Chain:
    """Append turns one batch at a time, as an agent would (the first batch carries the system prompt)."""
    for index in turns:
        batch = turn(index, output_bytes=output_bytes)
        if system and chain.last_seq == 0:
            batch = [{"role": "system", "content": "You are a careful pentester."}, *batch]
        chain_append(chain=chain, messages=batch)
        chain.refresh_from_db()
    return chain


def small_budgets(chain: Chain, **overrides: Any) -> SummarizerSettings:
    """A per-flow settings override with small byte budgets (rows made directly: tests pick odd combos)."""
    return SummarizerSettings.objects.create(profile=chain.agent.profile, flow=chain.agent.flow,
                                             **{**SMALL_BUDGETS, **overrides})


ASK_RE = re.compile(r"task \d+: scan host [\d.]+ and report open ports")


def _pipeline_reply(number: int, prompt: str) -> str:
    asks = ASK_RE.findall(prompt)
    return f"summary #{number} of {len(prompt)} prompt bytes. Latest ask: {asks[-1] if asks else 'none'}"


class PipelineSummarizer(FakeSummarizer):
    """The shared fake with a short deterministic reply that repeats the newest user ask it sees, as a real
    summary would (the compaction audit checks that)."""

    def __init__(self, *, fail: str | None = None) -> None:
        super().__init__(_pipeline_reply, fail=fail or False)


def use_summarizer(summarizer: Callable[[str], str]) -> None:
    """Every run takes `summarizer` as its summarize callable, whatever the flow or purpose, until the test ends
    (tests/app_fixtures.py restores the default factory after each test)."""
    set_summarizer_factory(lambda **_kw: summarizer)
