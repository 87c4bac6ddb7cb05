"""Gateway fixtures: a scripted upstream and the real product (`manage.py run --no-demo`) on loopback ports."""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes import free_port
from tests.flows.pipeline_live import PYTHON, Stack, wait_http
from tests.gateway.settle import wait_calls_closed
from tests.gateway.upstream_fake import MODEL, FakeUpstream

WINDOW_TOKENS = 6000
UPSTREAM_KEY = "sk-upstream-secret"
RESPONSES_WINDOW_TOKENS = 6000
RESPONSES_UPSTREAM_KEY = "sk-responses-upstream"


class Gateway:
    def __init__(self, stack: Stack, port: int, creds: dict[str, str], upstream: FakeUpstream) -> None:
        self.stack, self.port, self.creds, self.upstream = stack, port, creds, upstream
        self.base = f"http://127.0.0.1:{port}"
        self.v1 = self.base + "/v1"
        self.token = creds["token"]

    def shell(self, code: str) -> str:
        return self.stack.manage("shell", "-c", code)

    def query(self, expression: str) -> Any:
        """Evaluate a Python expression in the product's Django shell (models imported) and return it as JSON."""
        code = ("import json\nfrom flows.models import *\nfrom django.contrib.auth.models import User\n"
                f"print('RESULT ' + json.dumps({expression}, default=str))")
        out = self.shell(code)
        return json.loads(next(x for x in out.splitlines() if x.startswith("RESULT "))[7:])

    def chain(self, chain_id: int) -> dict[str, Any]:
        """The chain as the API shows it once its gateway calls are closed (tests.gateway.settle)."""
        from tests.flows.pipeline_live import api

        wait_calls_closed(self.query, chain_id)
        return api(self.base, "GET", f"/api/chains/{chain_id}", self.token)


@pytest.fixture(scope="package")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    upstream = FakeUpstream(window_tokens=WINDOW_TOKENS)
    var_dir: Path = tmp_path_factory.mktemp("gateway")
    stack = Stack.create(var_dir, LLM_SERVER_URL=upstream.url, LLM_SERVER_KEY=UPSTREAM_KEY, LLM_SERVER_MODEL=MODEL,
                         LLM_SERVER_CONTEXT_TOKENS=str(WINDOW_TOKENS))
    try:
        creds = stack.provision()
        port = free_port()
        proc = stack.start("run", [PYTHON, "manage.py", "run", "--no-demo", "--port", str(port)])
        wait_http(f"http://127.0.0.1:{port}/accounts/login/", proc, stack.log("run"))
        yield Gateway(stack, port, creds, upstream)
    finally:
        stack.close()
        upstream.close()


@pytest.fixture(scope="package")
def anthropic_stand(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The product in front of the scripted Anthropic upstream (tests/gateway/anthropic_stand.py), one for the
    package's Anthropic tests (the call loops, faults, the browser)."""
    from tests.gateway.anthropic_stand import running_stand

    with running_stand(tmp_path_factory.mktemp("anthropic-gateway")) as running:
        yield running


@pytest.fixture(scope="package")
def responses_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """The product in front of the scripted Responses upstream (which also writes the product's summaries)."""
    from tests.gateway.responses_loop import MODEL as RESPONSES_MODEL
    from tests.gateway.responses_loop import SummarizingResponsesUpstream

    upstream = SummarizingResponsesUpstream(window_tokens=RESPONSES_WINDOW_TOKENS, api_key=RESPONSES_UPSTREAM_KEY)
    var_dir: Path = tmp_path_factory.mktemp("responses-gateway")
    stack = Stack.create(var_dir, LLM_SERVER_URL=upstream.url, LLM_SERVER_KEY=RESPONSES_UPSTREAM_KEY,
                         LLM_SERVER_MODEL=RESPONSES_MODEL, LLM_SERVER_CONTEXT_TOKENS=str(RESPONSES_WINDOW_TOKENS))
    try:
        creds = stack.provision()
        port = free_port()
        proc = stack.start("run", [PYTHON, "manage.py", "run", "--no-demo", "--port", str(port)])
        wait_http(f"http://127.0.0.1:{port}/accounts/login/", proc, stack.log("run"))
        yield Gateway(stack, port, creds, upstream)  # type: ignore[arg-type]
    finally:
        stack.close()
        upstream.close()
