"""The chain page, round 2, in a real browser: seq order, phone widths, Compact now without a reload, deep links,
keyboard, search hits, downloads, the event and view-history pages, and the light theme."""
from __future__ import annotations

import json
import re

import pytest

from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS, PASSWORD, Server, screenshot, wait_for_js
from tests.e2e.test_dashboard import campaign_batches, open_live, plain_chain, rendered_seqs

pytestmark = pytest.mark.browser

NO_OVERFLOW = "document.documentElement.scrollWidth <= document.documentElement.clientWidth"


@pytest.fixture(scope="module")
def summarized(server: Server) -> dict[str, int]:
    """A demo flow whose chain went through a whole campaign, so it has summaries and events."""
    ids = server.demo_flow("Round two")
    for batch in campaign_batches(seed=3):
        server.append(ids["chain"], batch)
    server.settle(ids["chain"])
    return ids


@pytest.fixture(scope="module")
def long_chain(server: Server) -> int:
    chain = plain_chain(server, "Long chain")
    server.append(chain, [{"role": "system", "content": "You are a pentester."}] + [
        {"role": "user" if i % 2 else "assistant", "content": f"message {i} about host 10.0.{i}.1"}
        for i in range(1, 450)])
    server.settle(chain)
    return chain


def wait_for_summaries(page, server: Server, chain: int) -> None:
    page.goto(f"{server.url}/chains/{chain}/")
    for _ in range(60):
        if page.locator(".vmsg.is-summary").count():
            return
        page.wait_for_timeout(500)
        page.reload()
    raise AssertionError("no summary appeared")


def test_the_raw_column_reads_in_seq_order_beside_a_summarized_view(page, server, summarized):
    wait_for_summaries(page, server, summarized["chain"])
    seqs = rendered_seqs(page)
    assert seqs == sorted(seqs) and len(seqs) == len(set(seqs)) and seqs[0] == 1
    first = page.locator(".vmsg.is-summary").first
    lineage = first.get_attribute("data-lineage")
    start = int(re.split(r"[-,]", lineage)[0])
    band = first.locator("xpath=ancestor::div[contains(@class,'band ')]")
    assert int(band.locator(".raw-list .msg").first.get_attribute("data-seq")) == start
    first.locator(".lineage-link").click()
    assert page.locator(f"#m-{start}.is-lineage").count() == 1
    screenshot(page, "chain-page-seq-order")


@pytest.mark.parametrize("path", ["/", "/flows/{flow}/", "/chains/{chain}/", "/chains/{chain}/views/"])
def test_nothing_scrolls_sideways_at_360_px_and_log_out_stays_visible(server, summarized, path):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 360, "height": 740})
        page.goto(server.url + "/accounts/login/")
        assert page.evaluate(NO_OVERFLOW)
        page.fill("#id_username", "alice")
        page.fill("#id_password", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url(server.url + "/")
        page.goto(server.url + path.format(**summarized))
        assert page.evaluate(NO_OVERFLOW), page.evaluate("document.documentElement.scrollWidth")
        box = page.get_by_role("button", name="Log out").bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 360
        if path.startswith("/chains/{chain}/") and path.endswith("/{chain}/"):
            screenshot(page, "chain-page-360")
            page.locator(".col-toggle label", has_text="raw").click()
            assert page.locator(".band-view").first.is_hidden() and page.locator(".band-raw").first.is_visible()
            page.locator(".col-toggle label", has_text="view").click()
            assert page.locator(".band-raw").first.is_hidden()
            assert page.evaluate(NO_OVERFLOW)
        browser.close()


def test_compact_now_reports_its_own_event_without_a_reload(page, server, summarized):
    open_live(page, server, summarized["chain"])
    page.click("#compact-now > summary")
    assert page.locator("#compact-form").is_visible()
    page.keyboard.press("Escape")
    assert page.locator("#compact-form").is_hidden()
    page.click("#compact-now > summary")
    page.fill("#compact-instructions", "Keep the credentials")
    page.click("#compact-form button.btn-primary")  # not the dry run beside it
    queued = page.locator(".notice.is-own").first
    queued.wait_for()
    event_id = re.search(r"#(\d+)", queued.inner_text()).group(1)
    own = f".notice.is-own[data-key='event-{event_id}']"
    page.wait_for_selector(f"{own}.is-ok, {own}.is-skipped, {own}.is-failed", timeout=60_000)
    assert f"Compaction #{event_id}" in page.locator(f".notice[data-key='event-{event_id}']").inner_text()
    assert page.evaluate("window.__notReloaded === true")
    assert page.locator("#compact-form").is_hidden()
    screenshot(page, "chain-page-compact-now")


def test_a_deep_link_opens_the_page_holding_the_message(page, server, long_chain):
    page.goto(f"{server.url}/chains/{long_chain}/#m-5")
    page.wait_for_url(re.compile(r"page=1#m-5$"))
    target = page.locator("#m-5")
    target.wait_for()
    assert "is-target" in (target.get_attribute("class") or "")
    # In view, to the pixel: the browser's own anchor scroll may align the row's top at -0.03 px (subpixel layout).
    wait_for_js(page, "(() => { const r = document.getElementById('m-5').getBoundingClientRect();"
                      " return r.top >= -1 && r.bottom <= window.innerHeight + 1; })()")
    page.locator("#m-7 .seq-link").click()
    page.wait_for_url(re.compile(r"#m-7$"))
    wait_for_js(page, "document.getElementById('m-7').classList.contains('is-target')")  # set on hashchange


def test_keys_move_between_messages_and_summaries_and_open_help(page, server, summarized):
    page.goto(f"{server.url}/chains/{summarized['chain']}/?page=1")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.classList.contains('skip-link')")
    page.keyboard.press("?")
    assert page.locator("#kbd-help").is_visible()
    page.keyboard.press("Escape")
    assert page.locator("#kbd-help").is_hidden()
    page.keyboard.press("j")
    page.keyboard.press("j")
    assert page.evaluate("document.activeElement.dataset.seq") == "2"
    page.keyboard.press("k")
    assert page.evaluate("document.activeElement.dataset.seq") == "1"
    page.keyboard.press("]")
    assert page.evaluate("document.activeElement.classList.contains('is-summary')")
    for _ in range(10):  # a short summary is shown whole (no <details>): go on to one that folds
        if page.evaluate("!!document.activeElement.querySelector('details')"):
            break
        page.keyboard.press("]")
    assert page.evaluate("document.activeElement.classList.contains('is-summary')")
    page.keyboard.press("e")
    assert page.evaluate("!!document.activeElement.querySelector('details[open]')")
    page.keyboard.press("e")
    assert not page.evaluate("!!document.activeElement.querySelector('details[open]')")


def test_search_hits_are_highlighted_and_the_view_column_follows(page, server, long_chain):
    page.goto(f"{server.url}/chains/{long_chain}/?q=10.0.33.1")
    assert rendered_seqs(page) == [34]
    assert page.locator("mark.hit").first.inner_text() == "10.0.33.1"


def test_the_chain_downloads_from_its_page(page, server, summarized):
    page.goto(f"{server.url}/chains/{summarized['chain']}/")
    with page.expect_download() as info:
        page.locator(".downloads a", has_text="openai").click()
    data = json.loads(open(info.value.path(), encoding="utf-8").read())
    assert data[0]["role"] == "system" and len(data) > 10
    with page.expect_download() as info:
        page.locator(".downloads a", has_text="openclaw").click()
    assert info.value.suggested_filename.endswith(".jsonl")


def test_an_event_and_the_view_history_open_from_the_chain_page(page, server, summarized):
    wait_for_summaries(page, server, summarized["chain"])
    page.locator(".events-table a", has_text="#").first.click()
    page.wait_for_url(re.compile(r"/events/\d+/$"))
    assert page.get_by_role("heading", name="Model calls").is_visible()
    screenshot(page, "chain-event")
    page.goto(f"{server.url}/chains/{summarized['chain']}/views/")
    assert page.locator(".view-diff .msg").count() > 0
    screenshot(page, "chain-view-history")


def test_the_light_theme_follows_the_system_and_the_toggle_is_remembered(page, server, summarized):
    page.emulate_media(color_scheme="light")
    page.goto(f"{server.url}/chains/{summarized['chain']}/")
    bg = "getComputedStyle(document.body).backgroundColor"
    assert page.evaluate(bg) == "rgb(246, 248, 250)"
    page.click("#theme-toggle")
    assert page.evaluate(bg) == "rgb(15, 19, 24)"
    page.reload()
    assert page.evaluate(bg) == "rgb(15, 19, 24)"
    page.click("#theme-toggle")
    screenshot(page, "chain-page-light")


def test_the_heartbeat_delivers_appends_whose_frames_were_dropped(page, server):
    """Every frame but the heartbeat is dropped on the way to the browser: it alone must bring the messages."""
    chain = plain_chain(server, "Dropped frames")
    server.append(chain, [{"role": "system", "content": "You are a pentester."}])
    dropped: list[str] = []

    def relay(ws) -> None:
        upstream = ws.connect_to_server()

        def forward(message) -> None:
            kind = json.loads(message).get("type", "")
            if kind not in ("hello", "heartbeat"):
                dropped.append(kind)
                return
            ws.send(message)

        upstream.on_message(forward)
        ws.on_message(lambda message: upstream.send(message))

    page.route_web_socket(re.compile(r"/ws/chains/"), relay)
    open_live(page, server, chain)
    last = server.append(chain, [{"role": "user", "content": "scan 10.10.5.23"},
                                 {"role": "assistant", "content": "10.10.5.23 has ssh open"}])["last_seq"]
    page.wait_for_selector(f"#m-{last}", state="attached", timeout=20_000)
    assert "message.appended" in dropped and page.evaluate("window.pentagiLive.state.stats.heartbeats") >= 1
    assert rendered_seqs(page) == list(range(1, last + 1))
    assert page.evaluate("window.__notReloaded === true")
