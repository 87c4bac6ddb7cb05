"""Issue 23, bad input: hostile tool output never crashes the summarizer, never breaks a budget, and gives the
same summary twice. Time per call is a benchmark row (bench/summary_probes.py --bad-input), not a test."""
from __future__ import annotations

import base64
import random

import pytest

from summarizer import SummarizerConfig, extractive_summarize, make_extractive, summarize_chain, with_ledger
from summarizer.passes.prompts import build_summary_prompt

KB = 1024
MAX_BP = 4 * KB
_RNG = random.Random(23)
_BYTES = bytes(_RNG.randrange(256) for _ in range(120_000))

BAD_OUTPUTS = {
    "binary-looking": _BYTES.decode("latin-1"),
    "NUL and control bytes": "\x00\x01\x02\x7f header\x00" * 4_000 + " [+] CORP\\bob:pw1 (Pwn3d!)",
    "5 MB single line": "A" * (5 * KB * KB) + " then Password cracked: jorah:fr3edom",
    "base64 blob": base64.b64encode(_BYTES).decode(),
    "ANSI escape codes": "\x1b[34m ==( \x1b[0m\x1b[32mTarget 10.0.0.5\x1b[0m [+] CORP\\bob:pw1 (Pwn3d!)\r\n" * 2_000,
    "CRLF line ends": "port 445/tcp open microsoft-ds on 10.0.0.7\r\n" * 5_000,
    "mixed scripts": "Пароль: секрет 密码 كلمة المرور 10.0.0.9 ✓ 🙂 dc01.corp.local\n" * 3_000,
    "combining marks and zero-width characters": "e\u0301\u0301\u0301 \u200b\u200d\ufeff x " * 5_000,
}


def _chain(output: str) -> list[dict]:
    def call(cid: str) -> dict:
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": "terminal", "arguments": '{"cmd": "cat out"}'}}]}
    return [{"role": "system", "content": "You are a pentester."}, {"role": "user", "content": "Read the dump."},
            call("call_1"), {"role": "tool", "tool_call_id": "call_1", "content": output},
            call("call_2"), {"role": "tool", "tool_call_id": "call_2", "content": "ok"},
            {"role": "assistant", "content": "Read it."}]


@pytest.fixture(scope="module", params=sorted(BAD_OUTPUTS))
def replayed(request):
    output = BAD_OUTPUTS[request.param]
    config = SummarizerConfig(max_bp_bytes=MAX_BP, last_sec_bytes=64 * KB)
    first = summarize_chain(_chain(output), config, make_extractive())
    second = summarize_chain(_chain(output), config, make_extractive())
    return request.param, first, second


def test_bad_tool_output_is_summarized_without_an_error(replayed):
    name, result, _ = replayed
    assert result.error is None and result.calls == 1, name


def test_the_summary_of_bad_tool_output_stays_within_max_bp_bytes(replayed):
    name, result, _ = replayed
    summary = result.messages[3]["content"]
    assert result.messages[3]["role"] == "tool" and len(summary.encode("utf-8", "strict")) <= MAX_BP, name


def test_bad_tool_output_gives_the_same_summary_twice(replayed):
    name, first, second = replayed
    assert first.messages == second.messages, name


def test_lone_surrogates_fail_closed_with_a_clear_error_and_the_chain_unchanged():
    """JSON can carry "\\ud800"; UTF-8 cannot: the engine keeps the chain and says why (the app strips them)."""
    chain = _chain("dump \ud800 \udfff " * 2_000)
    result = summarize_chain(chain, SummarizerConfig(max_bp_bytes=MAX_BP), make_extractive())
    assert result.messages == chain and "surrogates not allowed" in (result.error or "")


def test_a_finding_after_a_five_megabyte_run_is_still_kept():
    prompt = build_summary_prompt([], [{"role": "assistant", "content": BAD_OUTPUTS["5 MB single line"]}])
    assert "jorah:fr3edom" in extractive_summarize(prompt, budget_bytes=2 * KB)
    assert "jorah:fr3edom" in with_ledger(prompt, "The agent read a dump.")


@pytest.mark.parametrize("budget", [64, 300, 2 * KB])
def test_the_offline_summary_of_every_bad_output_keeps_its_budget(budget):
    for name, output in BAD_OUTPUTS.items():
        if len(output) > KB * KB:
            continue  # the 5 MB case runs once above: it costs seconds on a busy machine
        prompt = build_summary_prompt([], [{"role": "assistant", "content": output}])
        assert len(extractive_summarize(prompt, budget_bytes=budget).encode("utf-8", "strict")) <= budget, name
