"""The demo's model: a scripted OpenAI-compatible endpoint on a loopback port of the demo's own process.

The demo agent calls the product's gateway (`POST /v1/chat/completions`) like any agent; the gateway forwards
the request here (in manage mode the view it fitted to the window) and the answer goes back to the agent through
the gateway. The answer is the script's: the agent puts it in the request's `x_demo_answer` field, which the
gateway passes through untouched as it does every unknown field, so one endpoint serves any number of demo
agents and keeps no state. Like a real model with a 16k window it refuses a request that does not fit, with
OpenAI's context-overflow error, which the gateway answers by compacting and retrying. Only 127.0.0.1.
"""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from flows.engine import count_tokens

__all__ = ["DEMO_PROVIDER_NAME", "ANSWER_FIELD", "ScriptedUpstream", "scripted_upstream"]

DEMO_PROVIDER_NAME = "demo"  # the gateway routes the model "demo/<model>" to the provider of this name
ANSWER_FIELD = "x_demo_answer"  # the assistant message the scripted model answers with
MAX_BODY_BYTES = 64 * 1024 * 1024

Message = dict[str, Any]


def _error(message: str, code: str, type_: str = "invalid_request_error") -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": None, "code": code}}


class ScriptedUpstream:
    """A ThreadingHTTPServer answering each chat completion with the scripted message the request carries."""

    def __init__(self, *, window_tokens: int) -> None:
        self.window_tokens = window_tokens
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        threading.Thread(target=self._server.serve_forever, daemon=True, name="demo-upstream").start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def answer(self, body: Any) -> tuple[int, dict[str, Any]]:
        """(status, JSON) for a chat completion request."""
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return 400, _error("'messages' must be a list", "invalid_messages")
        prompt = count_tokens(body["messages"], model=None)
        if prompt > self.window_tokens:
            return 400, _error(f"This model's maximum context length is {self.window_tokens} tokens. However, your "
                               f"messages resulted in {prompt} tokens. Please reduce the length of the messages.",
                               "context_length_exceeded")
        message = body.get(ANSWER_FIELD)
        if not isinstance(message, dict) or message.get("role") != "assistant":
            return 400, _error(f"the demo model answers only requests carrying '{ANSWER_FIELD}'", "no_script")
        completion = count_tokens([message], model=None)
        return 200, {
            "id": f"chatcmpl-demo-{time.monotonic_ns()}", "object": "chat.completion", "created": int(time.time()),
            "model": str(body.get("model", "")),
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                      "total_tokens": prompt + completion}}


def _handler_for(upstream: ScriptedUpstream) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
            pass  # the gateway records every call; the server log stays quiet

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                self._send(200, {"object": "list", "data": [{"id": "pentest-agent-16k", "object": "model",
                                                             "owned_by": "pentagi-web demo"}]})
            else:
                self._send(404, _error("not found", "not_found"))

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if not self.path.rstrip("/").endswith("/chat/completions") or length > MAX_BODY_BYTES:
                self._send(404, _error("not found", "not_found"))
                return
            try:
                body = json.loads(self.rfile.read(length))
            except ValueError:
                self._send(400, _error("the body is not JSON", "invalid_json"))
                return
            self._send(*upstream.answer(body))

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            raw = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

    return Handler


_shared: ScriptedUpstream | None = None
_shared_lock = threading.Lock()


def scripted_upstream(*, window_tokens: int) -> ScriptedUpstream:
    """The process's scripted upstream, started on first use (one loopback port for every demo agent)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = ScriptedUpstream(window_tokens=window_tokens)
        return _shared
