"""A scripted OpenAI-compatible HTTP server on 127.0.0.1 for the flows.pipeline.llm tests (no real model).

Each POST takes the next scripted reply (or the default completion when the script is empty); every request
body is kept so tests can check what was sent. Replies: `completion(...)`, `json_reply(status, body)`,
`raw_reply(status, body, content_type)`, `close_connection()`, `sleep_then(seconds, reply)`.
"""
from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

SHUTDOWN_POLL_SECONDS = 0.02  # serve_forever's default (0.5 s) would make every test's teardown slow

__all__ = ["FakeEndpoint", "Reply", "completion", "json_reply", "raw_reply", "close_connection", "sleep_then", "drip",
           "closed_port_url", "start_fake_endpoint", "running_endpoint", "isolate_llm", "make_provider"]


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    close: bool = False  # drop the connection without answering
    delay_seconds: float = 0.0
    drip_seconds: float = 0.0  # send the headers at once, then the body one byte per drip_seconds


def json_reply(status: int, body: Any) -> Reply:
    return Reply(status=status, body=json.dumps(body).encode())


def raw_reply(status: int, body: bytes, content_type: str = "application/json") -> Reply:
    return Reply(status=status, body=body, content_type=content_type)


def completion(*texts: str | None, prompt_tokens: int | None = 11, completion_tokens: int | None = 7) -> Reply:
    choices = [{"index": i, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}
               for i, text in enumerate(texts or ("a summary",))]
    body: dict[str, Any] = {"id": "cmpl-1", "object": "chat.completion", "created": 1, "model": "fake",
                            "choices": choices}
    if prompt_tokens is not None:
        body["usage"] = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                         "total_tokens": prompt_tokens + (completion_tokens or 0)}
    return json_reply(200, body)


def close_connection() -> Reply:
    return Reply(close=True)


def drip(seconds_per_byte: float, reply: Reply) -> Reply:
    """Headers now, then the body one byte at a time: every read succeeds, so only a total deadline ends it."""
    return Reply(status=reply.status, body=reply.body, content_type=reply.content_type,
                 drip_seconds=seconds_per_byte)


def sleep_then(seconds: float, reply: Reply) -> Reply:
    return Reply(status=reply.status, body=reply.body, content_type=reply.content_type, delay_seconds=seconds)


@dataclass
class FakeEndpoint:
    server: ThreadingHTTPServer
    script: deque[Reply] = field(default_factory=deque)
    requests: list[dict[str, Any]] = field(default_factory=list)
    models_payload: Any = field(default_factory=lambda: {"object": "list", "data": []})
    model_listings: int = 0  # GET /models requests served

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}/v1"

    def queue(self, *replies: Reply) -> None:
        self.script.extend(replies)

    def next_reply(self) -> Reply:
        return self.script.popleft() if self.script else completion()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _handler(endpoint: FakeEndpoint) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # keep test output clean
            pass

        def _send(self, reply: Reply) -> None:
            if reply.delay_seconds:
                time.sleep(reply.delay_seconds)
            if reply.close:
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            self.send_header("Content-Length", str(len(reply.body)))
            self.end_headers()
            if not reply.drip_seconds:
                self.wfile.write(reply.body)
                return
            for byte in reply.body:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                time.sleep(reply.drip_seconds)

        def do_GET(self) -> None:
            endpoint.model_listings += 1
            self._send(json_reply(200, endpoint.models_payload))

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            raw = self.rfile.read(length)
            endpoint.requests.append({"path": self.path, "auth": self.headers.get("Authorization", ""),
                                      "json": json.loads(raw or b"null")})
            self._send(endpoint.next_reply())

    return Handler


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Timeout tests hang up on purpose; the late reply's broken pipe is expected, not worth a traceback."""


def start_fake_endpoint() -> FakeEndpoint:
    server = _QuietServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    endpoint = FakeEndpoint(server=server)
    server.RequestHandlerClass = _handler(endpoint)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": SHUTDOWN_POLL_SECONDS},
                     daemon=True).start()
    return endpoint


def closed_port_url() -> str:
    """A URL where nothing listens (connections are refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


# --- pieces of the fixtures of the flows.pipeline.llm test modules ---

@contextmanager
def running_endpoint() -> Iterator[FakeEndpoint]:
    endpoint = start_fake_endpoint()
    try:
        yield endpoint
    finally:
        endpoint.stop()


def isolate_llm(monkeypatch: pytest.MonkeyPatch) -> None:
    """No env provider leaks in, no summary cached by an earlier test, back-off measured in milliseconds."""
    from flows.pipeline.llm import callables, client

    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "LLM_SERVER_URL", "LLM_SERVER_KEY", "LLM_SERVER_MODEL",
                 "LLM_SERVER_CONTEXT_TOKENS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(client, "BACKOFF_BASE_SECONDS", 0.001)
    callables.clear_summary_caches()


@pytest.fixture(autouse=True)
def isolated_llm(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Autouse in every module that imports it: isolation before the test and caches cleared after it."""
    isolate_llm(monkeypatch)
    yield
    isolate_llm(monkeypatch)


def make_provider(url: str, *, name: str = "fake", model: str = "fake-model", default: bool = True, **fields: Any):
    from flows.models.providers import ProviderConfig

    values = {"kind": "openai", "base_url": url, "api_key": "sk-test-secret-key-1234", "model": model,
              "is_default": default, "timeout_seconds": 5.0, "max_attempts": 3, "max_output_tokens": 64}
    values.update(fields)
    return ProviderConfig.objects.create(name=name, **values)
