"""A scripted OpenAI-compatible upstream on loopback: a tool-using 'model' with a context window and faults.

Every request it receives is kept (`requests`) so tests can check what the gateway really sent. A request whose
messages exceed `window_tokens` gets OpenAI's context-overflow error; `faults` scripts the next answers.
"""
from __future__ import annotations

import json
import select
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from summarizer import count_tokens, make_extractive

MODEL = "fake-model"


def answer_for(messages: list[dict[str, Any]], turn: int) -> dict[str, Any]:
    """One tool call per user request, then a final answer once its result is in."""
    if messages[-1]["role"] == "user":
        return {"role": "assistant", "content": None, "tool_calls": [{
            "id": f"call_{turn}", "type": "function",
            "function": {"name": "run_command", "arguments": json.dumps({"cmd": f"nmap -p {turn} 10.10.5.23"})}}]}
    return {"role": "assistant", "content": f"Port scan step {turn} done: see the output above."}


def _peer_closed(connection: socket.socket, timeout: float) -> bool:
    """True once the other end closes `connection` (within `timeout` seconds)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        readable, _, _ = select.select([connection], [], [], 0.1)
        if readable and not connection.recv(1, socket.MSG_PEEK):
            return True
    return False


class FakeUpstream:
    def __init__(self, window_tokens: int = 6000) -> None:
        self.window_tokens = window_tokens
        self.requests: list[dict[str, Any]] = []
        self.faults: list[str] = []
        self.answers: list[dict[str, Any]] = []  # scripted assistant messages, used before the tool-using script
        self.summary_requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.gave_up = threading.Event()  # a "hang_until_closed" request's connection was closed by the gateway
        self.models: list[dict[str, Any]] = [{"id": MODEL, "object": "model"}]  # what GET /models lists
        self.listings = 0  # GET /models requests received
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                with owner.lock:
                    owner.listings += 1
                owner._send(self, 200, {"object": "list", "data": owner.models})

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                owner._chat(self, raw)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, status: int, payload: Any) -> None:
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    def prompt_tokens(self, body: dict[str, Any]) -> int:
        """The prompt as this provider counts it: the messages only (see CountingUpstream for the rest)."""
        return count_tokens(body["messages"], model="gpt-4o")

    def refusal(self, body: dict[str, Any], tokens: int) -> str:
        """Why the request exceeds the window ("" when it fits)."""
        return "overflow" if tokens > self.window_tokens else ""

    def overflow_message(self, body: dict[str, Any], tokens: int) -> str:
        return (f"This model's maximum context length is {self.window_tokens} tokens. However, your messages "
                f"resulted in {max(tokens, self.window_tokens + 1)} tokens. Please reduce the length of the "
                "messages.")

    def _chat(self, handler: BaseHTTPRequestHandler, raw: bytes) -> None:
        body = json.loads(raw)
        if "tools" not in body:  # the product's own summarizer calls (the same endpoint writes summaries)
            self.summary_requests.append(body)
            prompt = "\n".join(str(m.get("content") or "") for m in body["messages"])
            text = make_extractive()(prompt)  # a faithful summary, so the identifier audit passes
            return self._send(handler, 200, {"id": "sum", "object": "chat.completion", "created": 0,
                                             "model": body["model"], "choices": [{"index": 0, "finish_reason":
                                             "stop", "message": {"role": "assistant", "content": text}}]})
        with self.lock:
            self.requests.append({"raw": raw, "body": body, "auth": handler.headers.get("Authorization")})
            turn = len(self.requests)
            fault = self.faults.pop(0) if self.faults else ""
            scripted = self.answers.pop(0) if self.answers else None
        if fault == "hang":
            time.sleep(30)
            return
        if fault == "hang_until_closed":  # answer nothing; note when the gateway gives the call up
            if _peer_closed(handler.connection, timeout=30):
                self.gave_up.set()
            return
        if fault == "slow":
            time.sleep(1.5)
        if fault == "garbage":
            return self._send(handler, 200, b"<html>bad gateway</html>")
        if fault == "ratelimit":
            return self._send(handler, 429, {"error": {"message": "Rate limit reached", "type": "requests",
                                                       "code": "rate_limit_exceeded"}})
        if fault == "drop":
            handler.connection.shutdown(socket.SHUT_RDWR)
            return
        tokens = self.prompt_tokens(body)
        refusal = self.refusal(body, tokens) or ("overflow" if fault == "overflow" else "")
        if refusal:
            return self._send(handler, 400, {"error": {"message": self.overflow_message(body, tokens),
                                                       "type": "invalid_request_error",
                                                       "code": "context_length_exceeded"}})
        message = scripted or answer_for(body["messages"], turn)
        if fault == "same_call":  # an agent stuck in a loop: the one call it already made, asked for again
            message = {"role": "assistant", "content": None, "tool_calls": [{"id": f"call_{turn}", "type": "function",
                       "function": {"name": "run_command", "arguments": '{"cmd": "cat /etc/passwd"}'}}]}
        usage = {"prompt_tokens": tokens, "completion_tokens": 12, "total_tokens": tokens + 12}
        if body.get("stream"):
            return self._stream(handler, body, message, usage, cut=fault == "midstream")
        self._send(handler, 200, {"id": f"chatcmpl-{turn}", "object": "chat.completion", "created": 0,
                                  "model": body["model"], "choices": [{"index": 0, "message": message,
                                  "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}],
                                  "usage": usage})

    def _stream(self, handler: BaseHTTPRequestHandler, body: dict[str, Any], message: dict[str, Any],
                usage: dict[str, Any], cut: bool) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Connection", "close")
        handler.end_headers()
        base = {"id": "chatcmpl-s", "object": "chat.completion.chunk", "created": 0, "model": body["model"]}

        def emit(delta: dict[str, Any], finish: str | None = None) -> None:
            chunk = {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
            handler.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
            handler.wfile.flush()

        emit({"role": "assistant", "content": ""})
        if message.get("tool_calls"):
            call = message["tool_calls"][0]
            emit({"tool_calls": [{"index": 0, "id": call["id"], "type": "function",
                                  "function": {"name": call["function"]["name"], "arguments": ""}}]})
            args = call["function"]["arguments"]
            for i in range(0, len(args), 7):
                emit({"tool_calls": [{"index": 0, "function": {"arguments": args[i:i + 7]}}]})
        else:
            for word in message["content"].split(" "):
                emit({"content": word + " "} if word != message["content"].split(" ")[-1] else {"content": word})
        if cut:
            handler.connection.shutdown(socket.SHUT_RDWR)
            return
        emit({}, "tool_calls" if message.get("tool_calls") else "stop")
        if (body.get("stream_options") or {}).get("include_usage"):
            handler.wfile.write(b"data: " + json.dumps({**base, "choices": [], "usage": usage}).encode() + b"\n\n")
        handler.wfile.write(b"data: [DONE]\n\n")
        handler.wfile.flush()
