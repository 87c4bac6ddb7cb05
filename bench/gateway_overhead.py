"""Gateway overhead: added latency per call against calling the same instant upstream directly.

Starts an instant OpenAI-compatible upstream on loopback and a real `manage.py run --no-demo` (SQLite, embedded
worker) through bench/server_harness.py. The upstream is a named, non-default provider ("bench-up"), so the
product's own summaries use the offline extractive summarizer. For chains of 10, 200 and 2,000 messages and
each mode, an agent resends its growing history (answer + a new user message per call, as real agents do;
timing starts once the first summarization of the whole new history settled);
the same bodies go straight to the upstream in the same run. Prints p50/p99 of both and of the difference, the
part of it spent summarizing on the request path (GatewayCall.summarize_ms), and the time to the first streamed
byte. `--wires chat,responses` adds the same rows for `POST /v1/responses` (the history as Responses items,
stateless: `store: false`, the whole input every call, the upstream's output items resent as they came, as Codex
does); `--wires anthropic` the same for `POST /v1/messages` (the history as Anthropic Messages: the system
prompt top-level, tool calls as `tool_use` blocks, their results as `tool_result` blocks, to a named Anthropic
provider). `--against-litellm` adds, for every chat case, LiteLLM's proxy in front of the same upstream
(bench/litellm_proxy.py; `litellm[proxy]` in the bench venv), timed in the same loop: gateway, direct, proxy.
Usage: .venv/bin/python bench/gateway_overhead.py [--calls 40] [--sizes 10,200] [--modes observe]
[--think-ms 100] [--no-stream] [--wires chat,responses,anthropic] [--against-litellm]
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from litellm_proxy import LiteLLMProxy  # noqa: E402
from server_harness import HOST, Server, free_port  # noqa: E402

SIZES = (10, 200, 2000)
MODES = ("observe", "manage")
WIRES = ("chat",)
ANSWER = {"role": "assistant", "content": "Noted; continuing with the next host."}
OUTPUT_ITEM = {"type": "message", "id": "msg_bench", "role": "assistant", "status": "completed",
               "content": [{"type": "output_text", "text": ANSWER["content"], "annotations": []}]}
MESSAGE = {"id": "msg_bench", "type": "message", "role": "assistant", "model": "bench-model",
           "content": [{"type": "text", "text": ANSWER["content"]}], "stop_reason": "end_turn",
           "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}
PATHS = {"chat": "/v1/chat/completions", "responses": "/v1/responses", "anthropic": "/v1/messages"}
RESPONSE = {"id": "resp_bench", "object": "response", "status": "completed", "model": "bench-model",
            "output": [OUTPUT_ITEM], "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}}


class Instant(BaseHTTPRequestHandler):
    """An upstream that answers at once. Like production servers (asyncio/uvicorn and Go set TCP_NODELAY and
    write a small response at once) it sends headers and body in one write: http.server's default of two
    unbuffered writes without TCP_NODELAY stalls every keep-alive call through the gateway's httpx client on
    Linux's delayed ACK (~40 ms measured), which would measure the kernel, not the gateway."""

    protocol_version = "HTTP/1.1"
    wbufsize = -1  # buffered: flushed once per response (below)

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path.endswith("/responses"):
            payload, content_type = responses_answer(bool(body.get("stream")))
        elif self.path.endswith("/messages"):
            payload, content_type = anthropic_answer(bool(body.get("stream")))
        elif body.get("stream"):
            chunks = [{"choices": [{"index": 0, "delta": {"role": "assistant", "content": ANSWER["content"]}}]},
                      {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}]
            payload = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"
            content_type = "text/event-stream"
        else:
            payload = json.dumps({"id": "x", "object": "chat.completion", "model": body["model"], "choices": [
                {"index": 0, "message": ANSWER, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()
            content_type = "application/json"
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()


def responses_answer(stream: bool) -> tuple[bytes, str]:
    """A Responses answer: the response object, or its semantic events."""
    if not stream:
        return json.dumps(RESPONSE).encode(), "application/json"
    opening = {**RESPONSE, "status": "in_progress", "output": []}
    part = {"type": "output_text", "text": "", "annotations": []}
    events = [{"type": "response.created", "response": opening},
              {"type": "response.output_item.added", "output_index": 0, "item": {**OUTPUT_ITEM, "content": []}},
              {"type": "response.content_part.added", "output_index": 0, "content_index": 0, "part": part},
              {"type": "response.output_text.delta", "output_index": 0, "content_index": 0,
               "delta": ANSWER["content"]},
              {"type": "response.output_item.done", "output_index": 0, "item": OUTPUT_ITEM},
              {"type": "response.completed", "response": RESPONSE}]
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events), "text/event-stream"


def anthropic_answer(stream: bool) -> tuple[bytes, str]:
    """An Anthropic Messages answer: the message, or its stream's events."""
    if not stream:
        return json.dumps(MESSAGE).encode(), "application/json"
    events = [{"type": "message_start", "message": {**MESSAGE, "content": [], "stop_reason": None}},
              {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
              {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": ANSWER["content"]}},
              {"type": "content_block_stop", "index": 0},
              {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
               "usage": {"output_tokens": 1}},
              {"type": "message_stop"}]
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events), "text/event-stream"


def as_anthropic(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The chat history as an Anthropic Messages request: tool results and the next user text in one user turn."""
    turns: list[dict[str, Any]] = []
    for m in messages[1:]:
        if m.get("tool_calls"):
            block: list[dict[str, Any]] = [{"type": "tool_use", "id": c["id"], "name": c["function"]["name"],
                                            "input": json.loads(c["function"]["arguments"])} for c in m["tool_calls"]]
        elif m["role"] == "tool":
            block = [{"type": "tool_result", "tool_use_id": m["tool_call_id"], "content": m["content"]}]
        elif m is ANSWER:
            block = MESSAGE["content"]  # the upstream's own blocks, resent as they came
        else:
            block = [{"type": "text", "text": m["content"]}]
        role = "assistant" if m["role"] == "assistant" else "user"
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"] = [*turns[-1]["content"], *block]
        else:
            turns.append({"role": role, "content": block})
    return {"system": messages[0]["content"], "messages": turns}


def as_responses(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The chat history as a Responses request's `instructions` and `input` items."""
    items: list[dict[str, Any]] = []
    for m in messages[1:]:
        if m["role"] == "tool":
            items.append({"type": "function_call_output", "call_id": m["tool_call_id"], "output": m["content"]})
        elif m.get("tool_calls"):
            items += [{"type": "function_call", "call_id": c["id"], "name": c["function"]["name"],
                       "arguments": c["function"]["arguments"]} for c in m["tool_calls"]]
        elif m is ANSWER:
            items.append(OUTPUT_ITEM)  # the upstream's own output item, resent as it came
        else:
            items.append({"role": m["role"], "content": m["content"]})
    return {"instructions": messages[0]["content"], "input": items, "store": False}


def request_body(wire: str, base: dict[str, Any], messages: list[dict[str, Any]]) -> dict[str, Any]:
    if wire == "anthropic":
        return {**base, "max_tokens": 256, **as_anthropic(messages)}
    return {**base, "messages": messages} if wire == "chat" else {**base, **as_responses(messages)}


def history(size: int, tag: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": f"You are a pentester ({tag})."},
                                 {"role": "user", "content": f"Assess 10.10.5.23 ({tag})"}]
    i = 0
    while len(out) < size - 1:
        out.append({"role": "assistant", "content": None, "tool_calls": [{"id": f"c{i}", "type": "function",
                    "function": {"name": "terminal", "arguments": json.dumps({"cmd": f"nmap -p {i} 10.10.5.23"})}}]})
        out.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"{i}/tcp open http Apache 2.4.{i % 60} " * 6})
        i += 1
    out.append({"role": "user", "content": "Continue."})
    return out[:size]


def post(conn: http.client.HTTPConnection, path: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[
        float, float, str]:
    """(total seconds, seconds to the first body byte, the X-Chain-Id the gateway answered with)."""
    started = time.perf_counter()
    conn.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json", **headers})
    response = conn.getresponse()
    response.read(1)
    first = time.perf_counter() - started
    rest = response.read()
    if response.status != 200:
        raise RuntimeError(f"{path}: HTTP {response.status}: {rest[:300]!r}")
    return time.perf_counter() - started, first, response.getheader("X-Chain-Id", "")


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))] * 1000


def run_case(server: Server, upstream_port: int, size: int, mode: str, calls: int, stream: bool,
             think: float, wire: str = "chat", proxy: LiteLLMProxy | None = None) -> list[dict[str, Any]]:
    """The case's row, and LiteLLM's row for the same calls when `proxy` is given (chat only)."""
    tag = f"{size}-{mode}-{stream}-{wire}-{time.monotonic_ns()}"
    path = PATHS[wire]
    messages = history(size, tag)
    gw = http.client.HTTPConnection(HOST, server.port, timeout=120)
    up = http.client.HTTPConnection(HOST, upstream_port, timeout=120)
    lite = http.client.HTTPConnection(HOST, proxy.port, timeout=120) if proxy is not None else None
    headers = {"Authorization": f"Bearer {server.token}", "X-Gateway-Mode": mode}
    provider = "bench-anth" if wire == "anthropic" else "bench-up"
    base = {"model": f"{provider}/bench-model", "stream": stream}
    *_, chain_id = post(gw, path, request_body(wire, base, messages), headers)  # not timed
    settle(gw, server.token, chain_id)
    gateway, direct, gw_first, up_first, proxied, proxied_first = [], [], [], [], [], []
    plain = {**base, "model": "bench-model"}
    for n in range(calls):
        time.sleep(think)  # the agent's own time between calls (its tools, its model); the worker summarizes
        messages = messages + [ANSWER, {"role": "user", "content": f"Next step {n}."}]
        total, first, _ = post(gw, path, request_body(wire, base, messages), headers)
        gateway.append(total)
        gw_first.append(first)
        total, first, _ = post(up, path, request_body(wire, plain, messages), {})
        direct.append(total)
        up_first.append(first)
        if lite is not None and proxy is not None:
            total, first, _ = post(lite, path, request_body(wire, plain, messages),
                                   {"Authorization": f"Bearer {proxy.key}"})
            proxied.append(total)
            proxied_first.append(first)
    for conn in (gw, up, lite):
        if conn is not None:
            conn.close()
    summarizing = summarize_seconds(server, chain_id)[-calls:]
    beyond = [g - d - s for g, d, s in zip(gateway, direct, summarizing, strict=True)]
    rows = [row(wire, size, mode, stream, gateway, gw_first, direct, up_first, summarizing, beyond)]
    if proxied:
        rows.append(row(wire, size, "LiteLLM proxy", stream, proxied, proxied_first, direct, up_first,
                        [0.0] * calls, [p - d for p, d in zip(proxied, direct, strict=True)]))
    return rows


def row(wire: str, size: int, mode: str, stream: bool, timed: list[float], first: list[float], direct: list[float],
        direct_first: list[float], summarizing: list[float], beyond: list[float]) -> dict[str, Any]:
    return {"size": size, "mode": mode, "stream": stream, "wire": wire,
            "gw50": pct(timed, 0.5), "gw99": pct(timed, 0.99),
            "up50": pct(direct, 0.5), "up99": pct(direct, 0.99),
            "add50": pct(timed, 0.5) - pct(direct, 0.5), "add99": pct(timed, 0.99) - pct(direct, 0.99),
            "sum50": pct(summarizing, 0.5), "beyond50": pct(beyond, 0.5),
            "ttfb50": pct(first, 0.5), "up_ttfb50": pct(direct_first, 0.5)}


def settle(conn: http.client.HTTPConnection, token: str, chain_id: str) -> None:
    """Wait until the worker's first summarization of the whole new history is done (the view version unchanged
    for a second): a real agent's chain grows a turn at a time; it does not arrive with 2,000 messages."""
    last, stable = None, 0
    while stable < 3:
        time.sleep(0.5)
        conn.request("GET", f"/api/chains/{chain_id}?limit=1", headers={"Authorization": f"Bearer {token}"})
        response = conn.getresponse()
        version = json.loads(response.read())["stats"]["view_version"]
        stable, last = (stable + 1, last) if version == last and version else (0, version)


def summarize_seconds(server: Server, chain_id: str) -> list[float]:
    """Per call of the chain, oldest first: the time the gateway spent summarizing on the request path."""
    out = server._manage("shell", "-c", "from flows.models import GatewayCall; print('MS', list(GatewayCall.objects"
                         f".filter(chain_id={int(chain_id)}).order_by('pk').values_list('summarize_ms', flat=True)))")
    line = next(x for x in out.splitlines() if x.startswith("MS "))
    return [ms / 1000 for ms in json.loads(line[3:])]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=40, help="timed calls per case (default 40)")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="chain sizes (default 10,200,2000)")
    parser.add_argument("--modes", default=",".join(MODES), help="modes (default observe,manage)")
    parser.add_argument("--no-stream", action="store_true", help="skip the streaming rows")
    parser.add_argument("--wires", default=",".join(WIRES),
                        help="wire formats: chat, responses, anthropic (default chat)")
    parser.add_argument("--think-ms", type=float, default=100.0,
                        help="pause before each call, as an agent's own tools and model take; the worker summarizes "
                             "the previous turn meanwhile, as it would between real calls (default 100; 0 makes "
                             "that summarization compete with the timed call)")
    parser.add_argument("--against-litellm", action="store_true",
                        help="also time LiteLLM's proxy in front of the same upstream (chat rows; needs "
                             "litellm[proxy] in this interpreter's venv)")
    args = parser.parse_args()
    sizes, modes, wires = [int(s) for s in args.sizes.split(",")], args.modes.split(","), args.wires.split(",")
    upstream = ThreadingHTTPServer((HOST, 0), Instant)
    upstream.daemon_threads = True
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    port = upstream.server_address[1]
    for key in ("LLM_SERVER_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        os.environ.pop(key, None)
    proxy = LiteLLMProxy(f"http://{HOST}:{port}/v1", free_port()).__enter__() if args.against_litellm else None
    try:
        rows = run_all(args, port, sizes, modes, wires, proxy)
    finally:
        if proxy is not None:
            proxy.__exit__()
        upstream.shutdown()
    print_table(rows)


def run_all(args: argparse.Namespace, port: int, sizes: list[int], modes: list[str], wires: list[str],
            proxy: LiteLLMProxy | None) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    think = args.think_ms / 1000
    with Server(db="sqlite", layer="embedded") as server:
        server._manage("shell", "-c", "from flows.models import ProviderConfig; ProviderConfig.objects.create("
                       f"name='bench-up', kind='openai', base_url='http://{HOST}:{port}/v1')\n"
                       f"ProviderConfig.objects.create(name='bench-anth', kind='anthropic', base_url='http://{HOST}:{port}')")
        for wire in wires:
            against = proxy if wire == "chat" else None
            for size in sizes:
                for mode in modes:
                    rows += run_case(server, port, size, mode, args.calls, stream=False, think=think, wire=wire,
                                     proxy=against)
                    print(f"done {wire} {size} {mode}", file=sys.stderr, flush=True)
            for mode in [] if args.no_stream else modes:
                rows += run_case(server, port, 200, mode, args.calls, stream=True, think=think, wire=wire,
                                 proxy=against)
    return rows


def print_table(rows: list[dict[str, Any]]) -> None:
    print("| wire | messages | mode | stream | gateway (or proxy) p50 / p99 ms | direct p50 / p99 ms "
          "| added p50 / p99 ms | of it summarizing p50 ms | added beyond summarizing p50 ms "
          "| first byte p50 ms (gateway / direct) |")
    print("|---|---:|---|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['wire']} | {r['size']:,} | {r['mode']} | {'yes' if r['stream'] else 'no'} "
              f"| {r['gw50']:.1f} / {r['gw99']:.1f} "
              f"| {r['up50']:.1f} / {r['up99']:.1f} | {r['add50']:.1f} / {r['add99']:.1f} | {r['sum50']:.1f} "
              f"| {r['beyond50']:.1f} | {r['ttfb50']:.1f} / {r['up_ttfb50']:.1f} |")


if __name__ == "__main__":
    main()
