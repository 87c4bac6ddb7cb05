"""Gateway request reading in deterministic counts: function calls (cProfile) or CPU instructions (callgrind).

The machine these run on is shared, so wall-clock figures of one call are noise; call and instruction counts of
the same work are not. For each wire (chat, responses, anthropic) and history size, an agent's request is read
once (the previous call: not counted), then its resend with two more messages (the answer and a new user
message, as agents do) is counted: the protocol's `parse`, `resolve` (a stateless Responses request converts
its items there), `extra_tokens` and the observe-mode upstream body. That is the part of a call that grows with
the history besides the JSON decode; the database work is the same at every size (benchmarks.md) and is not
run here (no database). The bodies are bench/gateway_overhead.py's history, as Responses items by its
`as_responses`, as Anthropic turns by the engine's `messages_to_anthropic`.

Usage: .venv/bin/python bench/gateway_counts.py [--sizes 200,2000] [--wires chat,responses,anthropic]
       [--callgrind]   (runs itself under `valgrind --tool=callgrind`, counting only the resend's reading)
"""
from __future__ import annotations

import argparse
import cProfile
import ctypes
import json
import os
import pstats
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from django_env import django_bench_setup  # noqa: E402
from gateway_overhead import ANSWER, as_responses, history  # noqa: E402

WIRES = ("chat", "responses", "anthropic")
SIZES = (200, 2000)
_TOGGLE_C = """#include <valgrind/callgrind.h>
void toggle(void) { CALLGRIND_TOGGLE_COLLECT; }
void dump(const char *name) { CALLGRIND_DUMP_STATS_AT(name); }
"""


def body(wire: str, messages: list[dict[str, Any]]) -> bytes:
    from flows.engine import messages_to_anthropic

    base: dict[str, Any] = {"model": "bench-model", "stream": False}
    if wire == "chat":
        doc = {**base, "messages": messages}
    elif wire == "responses":
        doc = {**base, **as_responses(messages)}
    else:
        doc = {**base, "max_tokens": 1024, **messages_to_anthropic(messages)}
    return json.dumps(doc).encode()


def reader(wire: str) -> Callable[[bytes], Any]:
    """What the gateway does with a request's bytes before threading it (observe mode)."""
    from flows.gateway.protocols import ANTHROPIC, CHAT, RESPONSES

    protocol = {"chat": CHAT, "responses": RESPONSES, "anthropic": ANTHROPIC}[wire]

    def read(raw: bytes) -> Any:
        request = protocol.resolve(protocol.parse(raw, {}, ""), None)
        protocol.extra_tokens(request)
        protocol.upstream_body(request, request.model, None)
        return request

    return read


def cases(sizes: list[int], wires: list[str]) -> list[tuple[str, int, Callable[[bytes], Any], bytes, bytes]]:
    out = []
    for wire in wires:
        for size in sizes:
            messages = history(size, f"{wire}-{size}")
            resend = messages + [ANSWER, {"role": "user", "content": "Next step."}]
            out.append((wire, size, reader(wire), body(wire, messages), body(wire, resend)))
    return out


def profile_counts(sizes: list[int], wires: list[str]) -> None:
    print("| wire | messages | function calls (cProfile) |\n|---|---:|---:|")
    for wire, size, read, first, resend in cases(sizes, wires):
        read(first)
        profiler = cProfile.Profile()
        profiler.runcall(read, resend)
        print(f"| {wire} | {size:,} | {pstats.Stats(profiler).total_calls:,} |")


def callgrind_child(sizes: list[int], wires: list[str], lib: str) -> None:
    toggles = ctypes.CDLL(lib)
    for wire, size, read, first, resend in cases(sizes, wires):
        read(first)
        toggles.toggle()
        read(resend)
        toggles.toggle()
        toggles.dump(f"{wire}-{size}".encode())


def callgrind_counts(sizes: list[int], wires: list[str]) -> None:
    work = Path(tempfile.mkdtemp(prefix="gateway-counts-"))
    (work / "toggle.c").write_text(_TOGGLE_C)
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(work / "toggle.so"), str(work / "toggle.c")], check=True)
    out = work / "callgrind.out"
    subprocess.run(["valgrind", "--tool=callgrind", "--collect-atstart=no", f"--callgrind-out-file={out}",
                    sys.executable, __file__, "--sizes", ",".join(map(str, sizes)), "--wires", ",".join(wires),
                    "--child", str(work / "toggle.so")], check=True, stderr=subprocess.DEVNULL,
                   env={**os.environ, "PYTHONHASHSEED": "0"})
    print("| wire | messages | instructions (callgrind Ir) |\n|---|---:|---:|")
    for dump in sorted(work.glob("callgrind.out.*"), key=lambda p: int(p.suffix[1:])):
        text = dump.read_text(errors="replace")
        name = re.search(r"^desc: Trigger: Client Request: (\S+)", text, re.M)
        total = re.search(r"^(?:summary|totals): (\d+)", text, re.M)
        if name and total:
            wire, size = name.group(1).rsplit("-", 1)
            print(f"| {wire} | {int(size):,} | {int(total.group(1)):,} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="history sizes (default 200,2000)")
    parser.add_argument("--wires", default=",".join(WIRES), help="wires (default chat,responses,anthropic)")
    parser.add_argument("--callgrind", action="store_true", help="instructions under valgrind instead of calls")
    parser.add_argument("--child", help=argparse.SUPPRESS)  # the run under valgrind: the toggle library's path
    args = parser.parse_args()
    sizes, wires = [int(s) for s in args.sizes.split(",")], args.wires.split(",")
    if args.callgrind:
        callgrind_counts(sizes, wires)
        return
    django_bench_setup("gateway-counts-")
    if args.child:
        callgrind_child(sizes, wires, args.child)
    else:
        profile_counts(sizes, wires)


if __name__ == "__main__":
    main()
