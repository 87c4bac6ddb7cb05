"""Daphne's HTTP parser with body limits, installed by `pentagi_web/asgi.py` (so under `manage.py run` and plain
`daphne pentagi_web.asgi:application` alike).

Twisted reads a whole request body (into memory, or a temporary file above 100 KB) before Daphne hands the
request to the application, and it parses a `multipart/form-data` body into `request.args` on the reactor's
thread: a 300 MB multipart POST to any URL once grew the server by 3.4 GB and stalled every other request for
17 s. Daphne never reads `args` (it passes the raw body on), so that parsing is switched off; Django parses
multipart bodies itself, in the view's thread, within its own caps. And the body limit of
`pentagi_web.body_limits` is applied as soon as the headers are in (from the Content-Length) and while a chunked
body streams in: the 413 goes out and the connection closes before the body is read.
"""
from __future__ import annotations

import io
import logging
from typing import Any

from pentagi_web.body_limits import body_limit, refusal

__all__ = ["LimitedWebRequest", "install"]

log = logging.getLogger(__name__)


def _request_path(target: bytes) -> str:
    """The path of a request target (origin form `/a?b`, or absolute form `http://host/a?b`)."""
    path = target.split(b"?", 1)[0]
    if b"://" in path:
        path = b"/" + path.split(b"://", 1)[1].partition(b"/")[2]
    return path.decode("latin-1")


class _Discard(io.RawIOBase):
    """Where the body of a refused request goes (nowhere): what still arrives before the close is dropped."""

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        return len(data)


def _limited(base: type) -> type:
    class LimitedRequest(base):
        _body_limit = 0
        _body_seen = 0
        _refused = False

        def gotLength(self, length: int | None) -> None:
            self._parsePOSTFormSubmission = False  # Daphne never reads request.args; Django parses multipart
            path = _request_path(getattr(self.channel, "_path", b"/"))
            self._limit_path = path
            self._body_limit = body_limit(path, _flat_headers(self.requestHeaders))
            if length is not None and length > self._body_limit:
                self._refuse()
                return
            super().gotLength(length)

        def handleContentChunk(self, data: bytes) -> None:
            if self._refused:
                return
            self._body_seen += len(data)
            if self._body_seen > self._body_limit:
                self._refuse()
                return
            super().handleContentChunk(data)

        def requestReceived(self, command: bytes, path: bytes, version: bytes) -> None:
            if self._refused:
                return  # answered already; the connection is closing
            super().requestReceived(command, path, version)

        def _refuse(self) -> None:
            self._refused = True
            self.content = _Discard()
            self.requestHeaders.removeHeader(b"Expect")  # no "100 Continue" after the refusal
            answer = refusal(self._limit_path, self._body_limit)
            log.info("refused a body over %d bytes for %s", self._body_limit, self._limit_path)
            self.channel.transport.write(
                b"HTTP/1.1 %d Payload Too Large\r\nContent-Type: %s\r\nContent-Length: %d\r\nConnection: close\r\n"
                b"\r\n" % (answer.status, answer.content_type, len(answer.body)) + answer.body)
            self.channel.loseConnection()

    LimitedRequest.__name__ = LimitedRequest.__qualname__ = "LimitedWebRequest"
    return LimitedRequest


def _flat_headers(headers: Any) -> list[tuple[bytes, bytes]]:
    return [(name, value) for name, values in headers.getAllRawHeaders() for value in values]


LimitedWebRequest: type | None = None


def install() -> None:
    """Make Daphne's HTTP factory build limited requests (idempotent; nothing happens without Daphne)."""
    global LimitedWebRequest
    try:
        from daphne import http_protocol
    except ImportError:
        return
    if LimitedWebRequest is not None and http_protocol.WebRequest is LimitedWebRequest:
        return
    LimitedWebRequest = _limited(http_protocol.WebRequest)
    http_protocol.WebRequest = LimitedWebRequest  # HTTPFactory.buildProtocol reads the module's name each time
