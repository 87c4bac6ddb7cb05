"""A total deadline on one model call, enforced inside the HTTP transport.

httpx2 timeouts are per operation: an endpoint that sends its headers and then one byte every 2 s never trips
a 60 s read timeout and keeps a summarization "running" for hours. This transport caps every request's
connect/read/write/pool timeouts at the time left, and checks the clock after every body chunk, so a call ends
(httpx2.ReadTimeout, which the openai client reports as a timeout) at most one chunk after its deadline.
"""
from __future__ import annotations

import time
from collections.abc import Iterator

import httpx2  # the HTTP client of openai>=3 (openai.DefaultHttpxClient is an httpx2.Client)

__all__ = ["DeadlineTransport", "DeadlineExceeded"]

TIMEOUT_KEYS = ("connect", "read", "write", "pool")
MIN_TIMEOUT_SECONDS = 0.05  # httpx treats 0 as "fail at once" on some backends and None as "no limit"


class DeadlineExceeded(httpx2.ReadTimeout):
    """The call's total time ran out (a ReadTimeout, so clients treat it as a timeout)."""


class _DeadlineStream(httpx2.SyncByteStream):
    def __init__(self, inner: httpx2.SyncByteStream, transport: DeadlineTransport, request: httpx2.Request) -> None:
        self.inner, self.transport, self.request = inner, transport, request

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self.inner:
            self.transport.check(self.request)
            yield chunk

    def close(self) -> None:
        self.inner.close()


class DeadlineTransport(httpx2.BaseTransport):
    """Wraps a transport; `deadline` (time.monotonic() value, None = no limit) applies to every request."""

    def __init__(self, inner: httpx2.BaseTransport | None = None) -> None:
        self.inner = inner or httpx2.HTTPTransport()
        self.deadline: float | None = None

    def remaining(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()

    def check(self, request: httpx2.Request) -> None:
        left = self.remaining()
        if left is not None and left <= 0:
            raise DeadlineExceeded("the model call's total deadline passed", request=request)

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        self.check(request)
        left = self.remaining()
        if left is not None:
            current = request.extensions.get("timeout", {})
            request.extensions["timeout"] = {
                key: max(MIN_TIMEOUT_SECONDS, min(left, current.get(key) or left)) for key in TIMEOUT_KEYS}
        response = self.inner.handle_request(request)
        if isinstance(response.stream, httpx2.SyncByteStream):
            response.stream = _DeadlineStream(response.stream, self, request)
        return response

    def close(self) -> None:
        self.inner.close()
