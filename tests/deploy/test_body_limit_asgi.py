"""The ASGI side of the body limits (pentagi_web/body_limits.BodyLimit): what holds under a server other than
Daphne, which hands the application the body while it streams in."""
from __future__ import annotations

import asyncio
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pentagi_web.body_limits import UNAUTHENTICATED_BODY_BYTES, BodyLimit, body_limit

AUTH = [(b"authorization", b"Bearer x")]


def _serve(path: str, headers: list[tuple[bytes, bytes]], chunks: list[bytes]) -> tuple[list[dict], bytes]:
    """Run BodyLimit over an app that reads the whole body and answers 200 with its length."""
    received: list[bytes] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            received.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": str(len(b"".join(received))).encode()})

    pending = [{"type": "http.request", "body": c, "more_body": i < len(chunks) - 1} for i, c in enumerate(chunks)]
    sent: list[dict] = []

    async def receive() -> dict:
        return pending.pop(0) if pending else {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {"type": "http", "path": path, "headers": headers}
    asyncio.run(BodyLimit(app)(scope, receive, send))
    return sent, b"".join(received)


def test_a_declared_length_over_the_limit_never_reaches_the_application():
    sent, received = _serve("/api/flows", [*AUTH, (b"content-length", b"999999999")], [b"x"])
    assert sent[0]["status"] == 413 and received == b""
    assert json.loads(sent[1]["body"])["error"] == "payload_too_large"


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=40_000), min_size=1, max_size=8), st.booleans())
def test_a_streamed_body_is_served_exactly_when_it_fits(sizes, credential):
    headers = AUTH if credential else []
    chunks = [b"a" * n for n in sizes]
    limit = body_limit("/v1/chat/completions", headers)
    sent, _ = _serve("/v1/chat/completions", headers, chunks)
    statuses = [m["status"] for m in sent if m["type"] == "http.response.start"]
    assert statuses == ([200] if sum(sizes) <= limit else [413])


def test_a_session_cookie_counts_as_a_credential_and_a_csrf_cookie_does_not():
    assert body_limit("/api/flows", [(b"cookie", b"csrftoken=a; sessionid=b")]) > UNAUTHENTICATED_BODY_BYTES
    assert body_limit("/api/flows", [(b"cookie", b"csrftoken=a")]) == UNAUTHENTICATED_BODY_BYTES


def test_pages_take_less_than_the_api_and_uploads_as_much(settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 16 * 1024 * 1024
    assert body_limit("/settings/", AUTH) == 1024 * 1024
    assert body_limit("/flows/upload/", AUTH) == body_limit("/api/import", AUTH) == 16 * 1024 * 1024
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1024 * 1024 * 1024
    assert body_limit("/v1/chat/completions", AUTH) == 64 * 1024 * 1024
