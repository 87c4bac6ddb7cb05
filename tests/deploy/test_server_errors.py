"""Issue 26 item 4: a 500, if one ever happens, is the route's JSON with the request id, and the log has the
traceback under that id (Django's request logger had no handler: a 500 was an HTML page logged nowhere)."""
from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator

import pytest
from asgiref.testing import ApplicationCommunicator

from pentagi_web.request_ids import RequestIdFilter

pytestmark = pytest.mark.urls("tests.deploy.urls_failing")


async def _get(path: str, request_id: bytes) -> tuple[dict, bytes]:
    from pentagi_web.asgi import application

    scope = {"type": "http", "method": "GET", "path": path, "raw_path": path.encode(), "query_string": b"",
             "headers": [(b"host", b"testserver"), (b"x-request-id", request_id)], "scheme": "http",
             "server": ("testserver", 80), "client": ("127.0.0.1", 1), "asgi": {"version": "3.0"},
             "http_version": "1.1", "root_path": ""}
    communicator = ApplicationCommunicator(application, scope)
    await communicator.send_input({"type": "http.request", "body": b""})
    start = await communicator.receive_output(timeout=10)
    body = await communicator.receive_output(timeout=10)
    await communicator.wait(timeout=10)
    return start, body["body"]


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.addFilter(RequestIdFilter())
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def request_log() -> Iterator[_Records]:
    """What django.request logs (it does not propagate to the root logger, where caplog listens)."""
    import pentagi_web.asgi  # noqa: F401 - its django.setup() configures logging anew: first, so ours stays

    handler = _Records()
    logger = logging.getLogger("django.request")
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)


@pytest.mark.parametrize(("path", "read"), [
    ("/v1/fail", lambda body: body["error"]["message"]),
    ("/api/fail", lambda body: body["detail"]),
])
def test_a_500_names_the_request_id_its_traceback_is_logged_under(path, read, request_log):
    start, body = asyncio.run(_get(path, b"req-500-test"))
    assert start["status"] == 500
    assert (b"x-request-id", b"req-500-test") in start["headers"]
    assert "req-500-test" in read(json.loads(body))
    record = next(r for r in request_log.records if r.levelno == logging.ERROR)
    assert record.exc_info and "a bug, for the test" in str(record.exc_info[1])
    assert getattr(record, "request_id", None) == "req-500-test"
