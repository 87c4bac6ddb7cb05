"""What the scripted wire-format upstreams share: a loopback HTTP server, recorded requests, scripted faults.

Like upstream_fake.FakeUpstream (a stdlib `ThreadingHTTPServer` in a daemon thread), for the Anthropic and
Responses upstreams: each keeps every request it got (`requests`: raw bytes, parsed body, headers), answers
JSON or SSE, and takes the next answer's fault from `faults` ("drip": events slowly, "cut": the stream ends
before its terminal event, "garbage": bytes that are not the format, "trickle": after the first event only
keep-alive pings for up to TRICKLE_SECONDS, then the rest, and each upstream's own). How each stream ended is
kept in `stream_ends` ("complete", "cut", "garbage", or "closed" when the client's connection went away
mid-stream); `wait_stream_end` waits for one.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.gateway.wire_events import sse

SECRET = b"scripted-upstream-signing-key"
DRIP_SECONDS = 0.05
TRICKLE_SECONDS = 30.0  # long enough that only a closed connection ends a "trickle" stream early
PING = {"type": "ping"}


def sign(text: str) -> str:
    """What only this upstream can produce for `text` (a thinking signature, a reasoning blob's seal)."""
    return hmac.new(SECRET, text.encode(), hashlib.sha256).hexdigest()


class ScriptedUpstream:
    """Subclasses route requests in `handle(handler, method, path, body)`."""

    def __init__(self, *, window_tokens: int, api_key: str | None = None) -> None:
        self.window_tokens = window_tokens
        self.api_key = api_key
        self.requests: list[dict[str, Any]] = []
        self.faults: list[str] = []
        self.stream_ends: list[str] = []
        self.lock = threading.Lock()
        self.ended = threading.Condition(self.lock)
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                owner.handle(self, "GET", self.path, None)

            def do_DELETE(self) -> None:
                owner.handle(self, "DELETE", self.path, None)

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                try:
                    body = json.loads(raw)
                except ValueError:
                    return owner.send(self, 400, owner.error_body(400, "invalid_request_error", "body is not JSON"))
                with owner.lock:
                    owner.requests.append({"raw": raw, "body": body, "path": self.path, "headers": dict(self.headers)})
                owner.handle(self, "POST", self.path, body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def handle(self, handler: BaseHTTPRequestHandler, method: str, path: str, body: Any) -> None:
        raise NotImplementedError

    def error_body(self, status: int, kind: str, message: str, **extra: Any) -> dict[str, Any]:
        raise NotImplementedError

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def next_fault(self) -> str:
        with self.lock:
            return self.faults.pop(0) if self.faults else ""

    def key_of(self, handler: BaseHTTPRequestHandler) -> str:
        bearer = handler.headers.get("Authorization", "")
        return handler.headers.get("x-api-key") or bearer.removeprefix("Bearer ").strip()

    @staticmethod
    def send(handler: BaseHTTPRequestHandler, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json" if not isinstance(payload, bytes) else "text/html")
        handler.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(body)

    def stream(self, handler: BaseHTTPRequestHandler, events: list[dict[str, Any]], *, fault: str,
               terminal: Callable[[dict[str, Any]], bool]) -> None:
        """SSE for `events`; "drip" spaces them out, "cut" stops before the terminal event, "garbage" sends HTML,
        "trickle" holds the stream open with pings; a write to a client that went away ends it as "closed"."""
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Connection", "close")
        handler.end_headers()
        if fault == "garbage":
            handler.wfile.write(b"<html><body>502 Bad Gateway</body></html>\n\n")
            return self._stream_ended("garbage")
        if fault == "trickle":
            events = [*events[:1], *[PING] * int(TRICKLE_SECONDS / DRIP_SECONDS), *events[1:]]
        try:
            for event in events:
                if fault == "cut" and terminal(event):
                    return self._stream_ended("cut")
                handler.wfile.write(sse([event]))
                handler.wfile.flush()
                if fault in ("drip", "trickle"):
                    time.sleep(DRIP_SECONDS)
        except (BrokenPipeError, ConnectionResetError):
            return self._stream_ended("closed")
        self._stream_ended("complete")

    def _stream_ended(self, how: str) -> None:
        with self.ended:
            self.stream_ends.append(how)
            self.ended.notify_all()

    def wait_stream_end(self, after: int, timeout: float) -> str | None:
        """How the first stream that ends after the first `after` ones ended, None if none did in time."""
        with self.ended:
            self.ended.wait_for(lambda: len(self.stream_ends) > after, timeout=timeout)
            return self.stream_ends[after] if len(self.stream_ends) > after else None
