"""A real browser on the chain page watches an Anthropic call arrive live: the official `anthropic` SDK streams a
`/v1/messages` call through `manage.py run` to the scripted Anthropic upstream, and without a reload the page
shows the call's row (started, then finished), the tool result the call appended and the answer with its
thinking, text and tool call, every piece of agent and model text escaped."""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS, wait_for_js
from tests.gateway.anthropic_stand import MODEL, SYSTEM, THINKING, TOOLS, Stand

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

ASKED = "scan <b>10.30.0.1</b>"
RESULT = "<img src=x onerror=window.__pwned=1> 22/tcp open ssh"  # the tool's output: hostile markup


@pytest.fixture
def stand(anthropic_stand: Stand) -> Stand:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Debian chromium not found at {CHROMIUM}")
    return anthropic_stand  # one server for the package's Anthropic tests (tests/gateway/conftest.py)


def _args(messages: list[Any]) -> dict[str, Any]:
    return {"model": MODEL, "max_tokens": 1024, "system": SYSTEM, "tools": TOOLS, "thinking": THINKING,
            "messages": messages}


def _row_text(page: Any, seq: int) -> str:
    return str(page.evaluate(f"document.getElementById('m-{seq}').textContent"))


def test_a_streamed_anthropic_call_appears_live_with_its_blocks_escaped(stand: Stand) -> None:
    from playwright.sync_api import sync_playwright

    client = stand.client("manage")
    stand.upstream.faults[:] = ["echo"]  # the answer's thinking, text and tool input repeat the user's text
    first = client.messages.with_raw_response.create(**_args([{"role": "user", "content": ASKED}]))
    chain_id, answer = int(first.headers["X-Chain-Id"]), first.parse()
    last_seq = len(stand.settled(chain_id)["raw"])  # system, user, the answer
    tool_use = next(b for b in answer.content if b.type == "tool_use")
    follow = [{"role": "user", "content": ASKED},
              {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in answer.content]},
              {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_use.id, "content": RESULT}]}]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context()
        context.add_cookies([{"name": "sessionid", "value": stand.session, "url": stand.base}])
        page = context.new_page()
        page.set_default_timeout(30_000)
        page.goto(f"{stand.base}/chains/{chain_id}/")
        page.wait_for_selector("#gateway-calls[data-live=on]")
        assert "thinks about " + ASKED in _row_text(page, last_seq)  # the first answer, rendered by the server
        page.evaluate("window.__sameDocument = true")  # gone if the page reloads
        rows_before = page.locator("#gateway-calls-rows tr[data-call-id]").count()
        streamed: dict[str, Any] = {}

        def call() -> None:
            stand.upstream.faults[:] = ["echo"]
            with client.messages.stream(**_args(follow)) as events:  # type: ignore[arg-type]
                streamed["answer"] = events.get_final_message()

        caller = threading.Thread(target=call)
        caller.start()
        wait_for_js(page, f"document.querySelectorAll('#gateway-calls-rows tr[data-call-id]').length > {rows_before}")
        page.wait_for_selector("#gateway-calls-rows tr:first-child.call-ok")  # the new call, finished
        caller.join(timeout=60)
        assert not caller.is_alive() and streamed["answer"].stop_reason == "tool_use"
        wait_for_js(page, f"document.getElementById('m-{last_seq + 2}') !== null")  # the tool result, the answer
        newest = page.locator("#gateway-calls-rows tr[data-call-id]").first
        assert "manage" in newest.inner_text() and "stream" in newest.inner_text()
        assert RESULT in _row_text(page, last_seq + 1)
        said = _row_text(page, last_seq + 2)
        assert "thinking" in said and "thinks about " + RESULT in said  # the thinking block, folded
        assert "says " + RESULT in said and f'→ terminal({{"cmd": "echo {RESULT}"}})' in said  # text, tool_use
        assert page.evaluate("window.__sameDocument === true")
        assert page.evaluate("document.querySelectorAll('img[onerror], img[src=x]').length") == 0
        assert not page.evaluate("[...document.querySelectorAll('b')].some(b => b.textContent === '10.30.0.1')")
        assert page.evaluate("window.__pwned === undefined")  # no markup of the agent's ever ran
        html = page.content()
        assert "&lt;img src=x onerror=window.__pwned=1&gt;" in html and "<img src=x" not in html
        browser.close()
