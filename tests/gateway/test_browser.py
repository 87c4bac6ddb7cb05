"""A real browser on the chain page sees a gateway call arrive live (row and finished status, no reload)."""
from __future__ import annotations

import threading
from pathlib import Path

import openai
import pytest

from tests.e2e.conftest import wait_for_js
from tests.gateway.agent_loop import TOOLS
from tests.gateway.conftest import Gateway
from tests.gateway.upstream_fake import MODEL

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]
CHROMIUM = "/usr/bin/chromium"


def test_a_gateway_call_appears_live_on_the_chain_page(gateway: Gateway) -> None:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Debian chromium not found at {CHROMIUM}")
    from playwright.sync_api import sync_playwright

    client = openai.OpenAI(base_url=gateway.v1, api_key=gateway.token, max_retries=0, timeout=60)
    messages = [{"role": "system", "content": "browser watcher"}, {"role": "user", "content": "scan <b>it</b>"}]
    first = client.chat.completions.with_raw_response.create(model=MODEL, messages=messages, tools=TOOLS)
    chain_id = int(first.headers["X-Chain-Id"])
    answer = first.parse().choices[0].message.model_dump(exclude_none=True)
    follow_up = messages + [answer, {"role": "tool", "tool_call_id": answer["tool_calls"][0]["id"],
                                     "content": "22/tcp open ssh"}]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--disable-gpu", "--disable-dev-shm-usage"])
        context = browser.new_context()
        context.add_cookies([{"name": "sessionid", "value": gateway.creds["session"], "url": gateway.base}])
        page = context.new_page()
        page.set_default_timeout(30_000)
        page.goto(f"{gateway.base}/chains/{chain_id}/")
        page.wait_for_selector("#gateway-calls[data-live=on]")
        rows_before = page.locator("#gateway-calls-rows tr[data-call-id]").count()
        call = threading.Thread(target=lambda: client.chat.completions.create(
            model=MODEL, messages=follow_up, tools=TOOLS, stream=True).response.read())
        call.start()
        wait_for_js(page, f"document.querySelectorAll('#gateway-calls-rows tr[data-call-id]').length > "
                          f"{rows_before}")
        page.wait_for_selector("#gateway-calls-rows tr:first-child.call-ok")  # the new call, finished
        call.join(timeout=60)
        newest = page.locator("#gateway-calls-rows tr[data-call-id]").first
        assert "manage" in newest.inner_text() and "stream" in newest.inner_text()
        assert page.locator("#gateway-calls-rows a").first.get_attribute("href", timeout=5000).startswith(
            f"/chains/{chain_id}/calls/")
        browser.close()


def test_a_responses_call_appears_live_on_the_chain_page(responses_gateway: Gateway) -> None:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Debian chromium not found at {CHROMIUM}")
    from playwright.sync_api import sync_playwright

    from tests.gateway.responses_loop import respond

    gateway = responses_gateway
    client = openai.OpenAI(base_url=gateway.v1, api_key=gateway.token, max_retries=0, timeout=60)
    first, chain_id = respond(client, stream=False, input="browser watcher: scan <b>it</b>")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--disable-gpu", "--disable-dev-shm-usage"])
        context = browser.new_context()
        context.add_cookies([{"name": "sessionid", "value": gateway.creds["session"], "url": gateway.base}])
        page = context.new_page()
        page.set_default_timeout(30_000)
        page.goto(f"{gateway.base}/chains/{chain_id}/")
        page.wait_for_selector("#gateway-calls[data-live=on]")
        rows_before = page.locator("#gateway-calls-rows tr[data-call-id]").count()
        follow = [{"type": "function_call_output", "call_id": first.output[0].call_id, "output": "22/tcp open"}]
        call = threading.Thread(target=lambda: respond(client, stream=True, input=follow,
                                                       previous_response_id=first.id))
        call.start()
        wait_for_js(page, f"document.querySelectorAll('#gateway-calls-rows tr[data-call-id]').length > "
                          f"{rows_before}")
        page.wait_for_selector("#gateway-calls-rows tr:first-child.call-ok")  # the new call, finished
        call.join(timeout=60)
        newest = page.locator("#gateway-calls-rows tr[data-call-id]").first
        assert "manage" in newest.inner_text() and "stream" in newest.inner_text()
        html = page.content()  # agent text is escaped, never markup
        assert "scan &lt;b&gt;it&lt;/b&gt;" in html and "scan <b>it</b>" not in html
        browser.close()
