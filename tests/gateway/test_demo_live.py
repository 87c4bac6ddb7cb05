"""`manage.py run` with its built-in demo: the demo agent's model calls go through the server's own gateway."""
from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from tests.fakes import free_port
from tests.flows.pipeline_live import PYTHON, Stack, wait_http

pytestmark = pytest.mark.timeout(300)

CALLS = """
import json
from flows.models import GatewayCall
rows = GatewayCall.objects.filter(chain__agent__flow__title__startswith='Demo: ').order_by('pk')
print('CALLS ' + json.dumps([[c.status, c.mode, c.model, c.response_seq, c.sent_tokens, c.error, c.budget,
                               len((c.request_params or {}).get('body', {}).get('tools') or [])] for c in rows]))
"""


@pytest.fixture
def stack(tmp_path) -> Iterator[Stack]:
    stack = Stack.create(tmp_path)
    yield stack
    stack.close()


def _calls(stack: Stack) -> list[list]:
    out = stack.manage("shell", "-c", CALLS)
    return json.loads(next(x for x in out.splitlines() if x.startswith("CALLS "))[6:])


def test_the_built_in_demo_calls_the_model_through_the_servers_gateway(stack: Stack) -> None:
    stack.manage("migrate", "--noinput")
    port = free_port()
    proc = stack.start("run", [PYTHON, "manage.py", "run", "--port", str(port)])
    wait_http(f"http://127.0.0.1:{port}/accounts/login/", proc, stack.log("run"))
    deadline, calls = time.monotonic() + 120, []
    while len(calls) < 3 and time.monotonic() < deadline:  # a call every 2 s or so, after the first turn
        time.sleep(2)
        calls = _calls(stack)
    assert len(calls) >= 3, stack.log("run")[-3000:]
    assert all(c[0] in ("ok", "running") and c[1] == "manage" and c[2] == "pentest-agent-16k" for c in calls), calls
    assert [c[3] for c in calls if c[0] == "ok"][:2] == [3, 5]  # after system + user, then after a tool result
    done = [c for c in calls if c[0] == "ok"]
    # the demo's 16k window is known where the call is routed (provider demo, model pentest-agent-16k), so manage
    # mode fits each request to it: without it the demo ran until its upstream refused an overflow
    assert all(c[6] and c[6]["window"] == 16384 for c in done), done
    assert all(c[7] == 2 for c in done)  # it declares its terminal and browser tools, as PentAGI does
    assert "demo failed" not in stack.log("run") and "stopped with an error" not in stack.log("run")


def test_the_foreground_demo_calls_a_running_servers_gateway(stack: Stack) -> None:
    stack.manage("migrate", "--noinput")
    port = free_port()
    proc = stack.start("run", [PYTHON, "manage.py", "run", "--no-demo", "--port", str(port)])
    wait_http(f"http://127.0.0.1:{port}/accounts/login/", proc, stack.log("run"))
    out = stack.manage("demo", "--campaigns", "1", "--speed", "50")
    assert "/v1/chat/completions" in out and "demo finished: 29 messages" in out, out
    calls = _calls(stack)
    assert len(calls) == 13 and {(c[0], c[2]) for c in calls} == {("ok", "pentest-agent-16k")}, calls
    left = stack.manage("shell", "-c", "from flows.models import ProviderConfig; "
                                       "print('LEFT', ProviderConfig.objects.filter(name__startswith='demo').count())")
    assert "LEFT 0" in left  # the command's own provider went with it
