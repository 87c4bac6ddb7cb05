"""Issue 26 item 4: bad input is the endpoint's own 400 on both deployments, logged with the request id, and
writes nothing.

Found: a lone surrogate in `content` or `model`, a 5,000-deep nested `content`, an integer over 4,300 digits and
(on PostgreSQL) a `model` of 300+ characters or with a NUL were an HTML 500 from the gateway, logged nowhere, and
on PostgreSQL the request's messages were appended with no call record; the integer was also a 500 on every API
write endpoint and in a JSON upload.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest

from tests.reliability.deployments import DEPLOYMENTS, Deployment, deployment, post

pytestmark = pytest.mark.services
HUGE_INT = "9" * 5000
DEEP = "[" * 5000 + "]" * 5000


@pytest.fixture(scope="module", params=DEPLOYMENTS)
def served(request, tmp_path_factory) -> Iterator[Deployment]:
    with deployment(request.param, tmp_path_factory.mktemp(request.param)) as d:
        yield d


def _counts(served: Deployment) -> list[int]:
    code = ("from flows.models import GatewayCall, Message, Flow\n"
            "print('COUNTS', GatewayCall.objects.count(), Message.objects.count(), Flow.objects.count())")
    line = next(x for x in served.stack.manage("shell", "-c", code).splitlines() if x.startswith("COUNTS"))
    return [int(n) for n in line.split()[1:]]


def _chat(model: str = '"gpt-4o"', content: str = '"hi"') -> bytes:
    return (f'{{"model": {model}, "messages": [{{"role": "system", "content": "s"}}, '
            f'{{"role": "user", "content": {content}}}]}}').encode()


GATEWAY_BODIES = {
    "lone surrogate in content": _chat(content='"\\ud800"'),
    "lone surrogate in model": _chat(model='"gpt\\udfff"'),
    "5000-deep content": _chat(content=DEEP),
    "integer over 4300 digits": _chat(content=HUGE_INT),
    "300-character model": _chat(model=json.dumps("m" * 300)),
    "NUL in model": _chat(model='"gpt\\u0000x"'),
}


def test_hostile_gateway_bodies_are_openai_400s_that_write_nothing(served):
    before = _counts(served)
    headers = {"Authorization": f"Bearer {served.token}", "Content-Type": "application/json",
               "X-Gateway-Mode": "observe"}
    for name, body in GATEWAY_BODIES.items():
        status, answer = post(served.base, "/v1/chat/completions", body, headers)
        assert status == 400, (name, status, answer[:300], served.log()[-3000:])
        error = json.loads(answer)["error"]
        assert error["type"] == "invalid_request_error" and error["message"], name
    assert _counts(served) == before, "a refused request wrote rows"


def _api_writes(served: Deployment) -> dict[str, tuple[str, bytes]]:
    token = {"Authorization": f"Bearer {served.token}", "Content-Type": "application/json"}
    status, flow = post(served.base, "/api/flows", b'{"title": "t"}', token)
    assert status == 201, flow
    flow_id = json.loads(flow)["id"]
    status, agent = post(served.base, f"/api/flows/{flow_id}/agents", b'{"agent_type": "pentester"}', token)
    assert status == 201, agent
    chain_id = json.loads(agent)["chain_id"]
    return {
        "create flow": ("/api/flows", f'{{"title": {HUGE_INT}}}'.encode()),
        "add agent": (f"/api/flows/{flow_id}/agents", f'{{"agent_type": {HUGE_INT}}}'.encode()),
        "append": (f"/api/chains/{chain_id}/messages",
                   f'{{"messages": [{{"role": "user", "content": {HUGE_INT}}}]}}'.encode()),
        "compact": (f"/api/chains/{chain_id}/compact", f'{{"instructions": {HUGE_INT}}}'.encode()),
        "preview": (f"/api/chains/{chain_id}/preview", f'{{"settings": {{"max_qa_bytes": {HUGE_INT}}}}}'.encode()),
        "import": ("/api/import", f'{{"data": [{{"role": "user", "content": {HUGE_INT}}}]}}'.encode()),
        "import a JSON file": ("/api/import", json.dumps(
            {"data": f'[{{"role": "user", "content": {HUGE_INT}}}]'}).encode()),
        "settings": ("/api/settings/agent", f'{{"max_qa_bytes": {HUGE_INT}}}'.encode()),
        "deep append": (f"/api/chains/{chain_id}/messages", b'{"messages": ' + DEEP.encode() + b"}"),
    }


def test_a_huge_integer_is_a_400_on_every_api_write_endpoint(served):
    writes = _api_writes(served)
    before = _counts(served)
    token = {"Authorization": f"Bearer {served.token}", "Content-Type": "application/json"}
    for name, (path, body) in writes.items():
        status, answer = post(served.base, path, body, token, method="PUT" if name == "settings" else "POST")
        assert status == 400, (name, status, answer[:300])
        assert json.loads(answer)["error"] in ("malformed_json", "invalid_format", "invalid_field"), (name, answer)
    assert _counts(served) == before


def test_a_refused_request_is_logged_with_the_id_its_answer_names(served):
    headers = {"Authorization": f"Bearer {served.token}", "Content-Type": "application/json",
               "X-Request-Id": "probe-4711"}
    status, _ = post(served.base, "/v1/chat/completions", GATEWAY_BODIES["integer over 4300 digits"], headers)
    assert status == 400
    assert re.search(r"WARNING django\.request \[probe-4711\]: Bad Request: /v1/chat/completions", served.log()), \
        served.log()[-2000:]
