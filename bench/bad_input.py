"""Bad input: how long one summarization of hostile tool output takes, and whether it keeps its budget.

One chain per case (a tool result of binary-looking bytes, a 5 MB single line, a base64 blob, ANSI escape codes,
CRLF line ends, mixed scripts), summarized by the engine's PentAGI passes with the extractive summarizer at
max_bp_bytes 4,096, three times: the summary must stay within the limit and be the same each time. Prints input
size, summary size, deterministic, and the slowest of the three runs (the figure issue 23 asks for).

Usage: python bench/bad_input.py [--runs 3]
"""
from __future__ import annotations

import argparse
import base64
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from summarizer import SummarizerConfig, make_extractive, summarize_chain  # noqa: E402

KB = 1024
MAX_BP = 4 * KB


def cases() -> dict[str, str]:
    rng = random.Random(23)
    blob = bytes(rng.randrange(256) for _ in range(256 * KB))
    return {
        "binary-looking (256 KB)": blob.decode("latin-1"),
        "5 MB single line": "A" * (5 * KB * KB) + " Password cracked: jorah:fr3edom",
        "base64 blob (341 KB)": base64.b64encode(blob).decode(),
        "ANSI escape codes": ("\x1b[34m ==( \x1b[0m\x1b[32mTarget 10.0.0.5\x1b[0m [+] CORP\\bob:pw1 (Pwn3d!)\r\n"
                              * 4_000),
        "CRLF line ends": "port 445/tcp open microsoft-ds on 10.0.0.7\r\n" * 10_000,
        "mixed scripts": "Пароль: секрет 密码 كلمة المرور 10.0.0.9 ✓ 🙂 dc01.corp.local\n" * 5_000,
    }


def _chain(output: str) -> list[dict]:
    def call(cid: str) -> dict:
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": "terminal", "arguments": '{"cmd": "cat out"}'}}]}
    return [{"role": "user", "content": "Read the dump."}, call("call_1"),
            {"role": "tool", "tool_call_id": "call_1", "content": output}, call("call_2"),
            {"role": "tool", "tool_call_id": "call_2", "content": "ok"}, {"role": "assistant", "content": "Read it."}]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    config = SummarizerConfig(max_bp_bytes=MAX_BP, last_sec_bytes=64 * KB)
    print(f"## Bad input (max_bp_bytes {MAX_BP:,}, extractive summarizer, {args.runs} runs each)\n")
    print("| input | bytes | summary bytes | within max_bp_bytes | deterministic | error | slowest run s |")
    print("|---|---:|---:|---|---|---|---:|")
    failed = False
    for name, output in cases().items():
        seconds, outputs, error = [], [], None
        for _ in range(args.runs):
            began = time.perf_counter()
            result = summarize_chain(_chain(output), config, make_extractive())
            seconds.append(time.perf_counter() - began)
            outputs.append(result.messages)
            error = error or result.error
        summary = outputs[0][2]["content"]
        size = len(summary.encode("utf-8"))
        same = all(o == outputs[0] for o in outputs)
        failed |= size > MAX_BP or not same or error is not None
        print(f"| {name} | {len(output.encode('utf-8')):,} | {size:,} | {'yes' if size <= MAX_BP else 'NO'} "
              f"| {'yes' if same else 'NO'} | {error or '–'} | {max(seconds):.2f} |")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
