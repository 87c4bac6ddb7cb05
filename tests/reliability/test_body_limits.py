"""Issue 26 item 1: bodies are refused before they are buffered, on both deployments.

Found: a 300 MB multipart POST to `/v1/models` grew the server from 383 MB to 3,842 MB and stalled an unrelated
GET for 17.3 s (Twisted parsed it on the reactor thread); `POST /api/import` took a 400 MB multipart file; an
unauthenticated 1.43 GB body to `/v1/chat/completions` was spooled to disk before its 401; a multipart body with
no parts got a bare 400 with no body. Each is replayed against `manage.py run` (SQLite) and plain Daphne
(PostgreSQL + Redis), with `MAX_REQUEST_BYTES` at 2 MiB so the limits are reached quickly.
"""
from __future__ import annotations

import json
import threading
from collections.abc import Iterator

import pytest

from tests.reliability.deployments import (
    DEPLOYMENTS,
    Deployment,
    deployment,
    post,
    probe_seconds,
    read_answer,
    send_head,
)

pytestmark = pytest.mark.services
LIMIT = 2 * 1024 * 1024
UNAUTHENTICATED = 64 * 1024
MEMORY_SLACK = 48 * 1024 * 1024  # well under the body sizes sent; the old server grew by gigabytes
PROBE_SECONDS = 5.0  # a GET on a loaded 2-core machine; the old server stalled one for 17 s


@pytest.fixture(scope="module", params=DEPLOYMENTS)
def served(request, tmp_path_factory) -> Iterator[Deployment]:
    with deployment(request.param, tmp_path_factory.mktemp(request.param), MAX_REQUEST_BYTES=str(LIMIT)) as d:
        yield d


def _refused_from_the_head(served: Deployment, path: str, declared: int, headers: dict[str, str]) -> dict:
    """Send only the request head declaring `declared` bytes: a 413 must come back without any body sent."""
    sock = send_head(served.port, "POST", path, {"Content-Length": str(declared), **headers})
    try:
        answer = read_answer(sock)
    finally:
        sock.close()
    assert answer.status == 413, (answer, served.log()[-2000:])
    assert answer.headers["content-type"].startswith("application/json")
    return json.loads(answer.body)


def test_a_multipart_body_over_the_limit_to_any_url_is_refused_unread(served):
    body = _refused_from_the_head(served, "/v1/models", 300_000_000,
                                  {"Content-Type": "multipart/form-data; boundary=xyz"})
    assert body["error"]["code"] == "request_too_large"
    assert str(UNAUTHENTICATED) in body["error"]["message"]  # no credential: the small cap


def test_an_unauthenticated_gigabyte_to_chat_completions_is_refused_before_the_401(served):
    body = _refused_from_the_head(served, "/v1/chat/completions", 1_430_000_000,
                                  {"Content-Type": "application/json"})
    assert body["error"]["type"] == "invalid_request_error"


def test_an_import_over_its_limit_is_refused_even_with_a_valid_token(served):
    body = _refused_from_the_head(served, "/api/import", 400_000_000, {
        "Content-Type": "multipart/form-data; boundary=xyz", "Authorization": f"Bearer {served.token}"})
    assert body == {"error": "payload_too_large", "detail": body["detail"], "limit_bytes": LIMIT}


def test_without_a_credential_only_a_small_body_is_read(served):
    body = _refused_from_the_head(served, "/api/flows", UNAUTHENTICATED + 1, {"Content-Type": "application/json"})
    assert body["limit_bytes"] == UNAUTHENTICATED
    status, _ = post(served.base, "/api/flows", b"{}", {"Content-Type": "application/json"})
    assert status == 401  # a small body still gets the API's own answer


def test_an_import_within_its_limit_is_served(served):
    messages = [{"role": "user", "content": "x" * 1000}] * 1200  # about 1.2 MB
    data = json.dumps({"format": "openai", "data": messages}).encode()
    assert UNAUTHENTICATED < len(data) < LIMIT
    status, answer = post(served.base, "/api/import", data, {
        "Content-Type": "application/json", "Authorization": f"Bearer {served.token}"})
    assert status == 201, answer[:500]


def test_a_multipart_body_with_no_parts_gets_the_routes_own_error(served):
    auth = {"Authorization": f"Bearer {served.token}", "Content-Type": "multipart/form-data; boundary=xyz"}
    status, answer = post(served.base, "/api/import", b"--xyz--\r\n", auth)
    assert status == 400 and json.loads(answer)["error"] == "invalid_body", answer
    status, answer = post(served.base, "/v1/chat/completions", b"--xyz--\r\n", auth)
    assert status == 400 and json.loads(answer)["error"]["type"] == "invalid_request_error", answer


class _Streamer(threading.Thread):
    """Streams a chunked multipart body of up to `total` bytes until the server stops taking it."""

    def __init__(self, port: int, path: str, total: int) -> None:
        super().__init__(daemon=True)
        self.port, self.path, self.total = port, path, total
        self.sent = 0
        self.status: int | None = None

    def run(self) -> None:
        sock = send_head(self.port, "POST", self.path, {
            "Transfer-Encoding": "chunked", "Authorization": "Bearer not-checked-yet",
            "Content-Type": "multipart/form-data; boundary=xyz"})
        part = b"--xyz\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\n" + b"a" * 65000 + b"\r\n"
        chunk = b"%x\r\n%s\r\n" % (len(part), part)
        try:
            while self.sent < self.total:
                sock.sendall(chunk)
                self.sent += len(part)
            sock.sendall(b"0\r\n\r\n")
        except OSError:
            pass  # the server cut the body off
        try:
            self.status = read_answer(sock, timeout=10).status
        except (OSError, ConnectionError):
            self.status = None  # the 413 was lost to the reset of a socket closed with unread data
        finally:
            sock.close()


def test_a_chunked_flood_is_cut_off_without_growing_the_server_or_stalling_others(served):
    before = served.rss_bytes()
    total = 64 * LIMIT
    streamer = _Streamer(served.port, "/v1/models", total)
    streamer.start()
    probes = []
    while streamer.is_alive() and len(probes) < 50:
        probes.append(probe_seconds(served.base))
    streamer.join(timeout=60)
    assert not streamer.is_alive()
    grown = served.rss_bytes() - before
    print(f"\nBODY-FLOOD {served.name} sent={streamer.sent} status={streamer.status} grown={grown} "
          f"probe_max={max(probes, default=0):.3f}s probes={len(probes)}")
    assert streamer.sent < total / 4, "the server kept reading far past the limit"
    assert streamer.status in (413, None)
    assert grown < MEMORY_SLACK
    assert max(probes, default=0.0) < PROBE_SECONDS
    assert probe_seconds(served.base) < PROBE_SECONDS  # and the server is still serving
