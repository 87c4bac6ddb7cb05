"""Issue 20 item 5 against the real product (`manage.py run`) with the official `openai` SDK: the summary model
(the same scripted endpoint as the agent's upstream) answers HTTP 500; with `summary_fallback` offline the
agent's call is answered, with `fail` the SDK raises the one clear 400."""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.fakes import free_port
from tests.flows.pipeline_live import PYTHON, Stack, wait_http
from tests.gateway.agent_loop import TOOLS
from tests.gateway.test_summary_fallback import WINDOW_TOKENS, GarbageSummaries, _history
from tests.gateway.upstream_fake import MODEL

pytestmark = pytest.mark.timeout(300)


class Stand:
    def __init__(self, stack: Stack, port: int, token: str, upstream: GarbageSummaries) -> None:
        self.stack, self.token, self.upstream = stack, token, upstream
        self.v1 = f"http://127.0.0.1:{port}/v1"

    def client(self) -> openai.OpenAI:
        return openai.OpenAI(base_url=self.v1, api_key=self.token, max_retries=0, timeout=120)

    def fallback(self, value: str) -> None:
        self.stack.manage("shell", "-c", "from flows.config import settings_save\n"
                          f"settings_save(profile='agent', flow=None, data={{'summary_fallback': {value!r}}}, "
                          "source='api')")

    def reasons(self, chain_id: str) -> str:
        out = self.stack.manage("shell", "-c", "import json\nfrom flows.models import SummaryEvent\nprint('RESULT ' + "
                                f"json.dumps(list(SummaryEvent.objects.filter(chain_id={int(chain_id)})"
                                ".values_list('reason', flat=True))))")
        return "\n".join(json.loads(next(x for x in out.splitlines() if x.startswith("RESULT "))[7:]))


@pytest.fixture(scope="module")
def stand(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stand]:
    upstream = GarbageSummaries("http500")
    var_dir: Path = tmp_path_factory.mktemp("summary-fallback")
    stack = Stack.create(var_dir, LLM_SERVER_URL=upstream.url, LLM_SERVER_KEY="sk-upstream", LLM_SERVER_MODEL=MODEL,
                         LLM_SERVER_CONTEXT_TOKENS=str(WINDOW_TOKENS))
    try:
        creds = stack.provision()
        port = free_port()
        proc = stack.start("run", [PYTHON, "manage.py", "run", "--no-demo", "--port", str(port)])
        wait_http(f"http://127.0.0.1:{port}/accounts/login/", proc, stack.log("run"))
        yield Stand(stack, port, creds["token"], upstream)
    finally:
        stack.close()
        upstream.close()


def _ask(stand: Stand, task: str) -> Any:
    messages = _history()
    messages[1] = {"role": "user", "content": task}  # a new conversation: its own chain
    return stand.client().chat.completions.with_raw_response.create(model=MODEL, messages=messages,
                                                                    tools=TOOLS)  # type: ignore[arg-type]


def test_the_sdk_call_is_answered_when_the_summary_model_fails_and_refused_clearly_in_fail_mode(stand: Stand) -> None:
    raw = _ask(stand, "audit 10.10.5.23")
    assert raw.parse().choices[0].message is not None
    assert stand.upstream.summary_calls >= 1
    reasons = stand.reasons(raw.headers["X-Chain-Id"])
    assert "HTTP 500" in reasons and "the offline summarizer stood in" in reasons, reasons

    stand.fallback("fail")
    with pytest.raises(openai.BadRequestError) as refused:
        _ask(stand, "audit 10.10.5.24")
    assert refused.value.code == "context_length_exceeded"
    assert "the summary model failed" in refused.value.message and "HTTP 500" in refused.value.message
