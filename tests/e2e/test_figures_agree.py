"""Numbers agree everywhere (issue 24 item 7): each figure the chain, event and flow pages show is read in the
browser and compared with the API's answer, before and after a live append; every time shows in the browser's
locale and zone, server-rendered rows and rows that arrived live alike."""
from __future__ import annotations

from typing import Any

import pytest

from flows.templatetags.dashboard import kb, ktok, num
from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS, Server, login, wait_for_js
from tests.e2e.test_dashboard import campaign_batches

pytestmark = pytest.mark.browser

LOCALE, ZONE = "en-US", "America/New_York"  # 12 h and 5 h off UTC: a time left as the server wrote it would show
TIME_OPTIONS = {"time": {"hour": "2-digit", "minute": "2-digit", "second": "2-digit"},
                "datetime": {"year": "numeric", "month": "2-digit", "day": "2-digit", "hour": "2-digit",
                             "minute": "2-digit", "second": "2-digit"},
                "short": {"month": "short", "day": "numeric", "hour": "2-digit", "minute": "2-digit"}}


@pytest.fixture
def us_page(server: Server):
    """A logged-in page whose browser runs in New York with US English."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        pg = browser.new_context(viewport={"width": 1440, "height": 1000}, locale=LOCALE,
                                 timezone_id=ZONE).new_page()
        pg.set_default_timeout(20_000)
        login(pg, server)
        yield pg
        browser.close()


@pytest.fixture(scope="module")
def campaign(server: Server) -> dict[str, Any]:
    """A demo flow after all but the last turn of a campaign (summaries and events); the last turn is kept for
    the live append."""
    ids = server.demo_flow("Figures agree")
    batches = campaign_batches(seed=7)
    for batch in batches[:-1]:
        server.append(ids["chain"], batch)
    server.settle(ids["chain"])
    return {**ids, "last_batch": batches[-1]}


def api_chain(server: Server, chain_id: int) -> dict[str, Any]:
    return server.api("GET", f"/api/chains/{chain_id}?limit=1")


def card(page, card_id: str) -> dict[str, str]:
    return page.evaluate("""id => { const c = document.getElementById(id);
        const f = n => (c.querySelector(`[data-fig="${n}"]`) || {}).textContent;
        return {value: c.querySelector('.stat-value').textContent.trim(), sub: c.querySelector('.stat-sub').textContent,
                bytes: f('bytes'), messages: f('messages'), tokens: f('tokens')}; }""", card_id)


def check_chain_figures(page, stats: dict[str, Any]) -> None:
    raw = card(page, "stat-raw")
    assert (raw["bytes"], raw["messages"], raw["tokens"]) == (
        kb(stats["raw_bytes"]), num(stats["raw_messages"]), ktok(stats["raw_tokens"]))
    view = card(page, "stat-view")
    assert view["value"] == kb(stats["view_bytes"])
    assert f"{num(stats['view_messages'])} messages · {ktok(stats['view_tokens'])} tokens" in view["sub"]
    legends = page.eval_on_selector_all(".charts figure", "fs => fs.map(f => [...f.querySelectorAll('.lg')]"
                                                          ".map(l => l.textContent))")
    assert legends[0][:2] == [f"raw chain {kb(stats['raw_bytes'])}", f"model view {kb(stats['view_bytes'])}"]
    assert legends[1][0] == f"view tokens {ktok(stats['view_tokens'])}"
    assert page.locator("#compactions-count").inner_text() == str(stats["compactions"])


def check_event_rows(page, events: list[dict[str, Any]]) -> int:
    by_id = {e["id"]: e for e in events}
    rows = page.eval_on_selector_all(".events-table tbody tr", "rs => rs.map(r => [Number(r.dataset.eventId), "
                                     "r.querySelector('.event-calls').textContent, "
                                     "r.querySelector('.event-model').textContent])")
    for event_id, calls, model in rows:
        e = by_id[event_id]
        assert calls == f"{e['calls']} summarize call{'s' if e['calls'] != 1 else ''} · {e['model_calls']} to a model"
        assert model == (e["summarizer_model"] or ("extractive" if e["calls"] else "–"))
    return len(rows)


def check_times(page) -> int:
    """Every formatted time reads as the browser writes its instant (never the server's UTC text)."""
    times = page.eval_on_selector_all("time[data-fmt]", "ts => ts.map(t => [t.getAttribute('datetime'), "
                                      "t.dataset.fmt, t.textContent])")
    for iso, fmt, text in times:
        assert text == page.evaluate("([iso, o]) => new Date(iso).toLocaleString(undefined, o)",
                                     [iso, TIME_OPTIONS[fmt]])
    return len(times)


def test_the_chain_page_agrees_with_the_api_before_and_after_a_live_append(us_page, server, campaign):
    chain_id = campaign["chain"]
    us_page.goto(f"{server.url}/chains/{chain_id}/")
    us_page.wait_for_selector("#live-status[data-state='live']")
    check_chain_figures(us_page, api_chain(server, chain_id)["stats"])
    events = server.api("GET", f"/api/chains/{chain_id}/events")["events"]
    assert check_event_rows(us_page, events) > 0
    assert check_times(us_page) > 0
    assert "M" in us_page.locator(".events-table time").first.inner_text()  # AM/PM: the browser's, not 24 h UTC

    # A user message ends no agent turn: nothing is summarized, so no panel swap can redraw the card; what it
    # shows after the append is the page's own live update.
    swaps = us_page.evaluate("window.pentagiLive.state.stats.swaps")
    last = server.append(chain_id, [{"role": "user", "content": "Also check 10.10.5.99 for SMB shares."}])["last_seq"]
    wait_for_js(us_page, f"window.pentagiLive.state.lastSeq >= {last}")
    stats = api_chain(server, chain_id)["stats"]
    assert stats["raw_messages"] == last
    raw = card(us_page, "stat-raw")  # the raw-chain card followed the append, as the list did
    assert (raw["bytes"], raw["messages"], raw["tokens"]) == (kb(stats["raw_bytes"]), num(last),
                                                              ktok(stats["raw_tokens"]))
    legend = us_page.locator(".charts figure").first.locator(".lg-raw").inner_text()
    assert legend == f"raw chain {kb(stats['raw_bytes'])}"
    assert us_page.locator(f"#m-{last}").count() == 1
    assert us_page.evaluate("window.pentagiLive.state.stats.swaps") == swaps

    server.append(chain_id, campaign["last_batch"])
    server.settle(chain_id)  # the turn's summarization lands and the panel is swapped in live
    version = api_chain(server, chain_id)["stats"]["view_version"]
    wait_for_js(us_page, f"document.getElementById('chain-live').dataset.viewVersion === '{version}'")
    check_chain_figures(us_page, api_chain(server, chain_id)["stats"])
    check_event_rows(us_page, server.api("GET", f"/api/chains/{chain_id}/events")["events"])
    check_times(us_page)  # rows the swap brought in are formatted too


def test_the_event_page_agrees_with_the_api(us_page, server, campaign):
    chain_id = campaign["chain"]
    events = server.api("GET", f"/api/chains/{chain_id}/events")["events"]
    for e in [ev for ev in events if ev["outcome"] == "ok"][:3]:
        us_page.goto(f"{server.url}/chains/{chain_id}/events/{e['id']}/")
        head = us_page.locator(".page-head")
        calls = f"{e['calls']} summarize call{'s' if e['calls'] != 1 else ''} · {e['model_calls']} to a model"
        assert head.locator(".event-calls").inner_text() == calls
        assert head.locator(".event-model").inner_text() == (e["summarizer_model"] or "extractive")
        assert us_page.locator("#calls-h + *").count() == 1
        assert f"{kb(e['bytes_before'])} → {kb(e['bytes_after'])}" in us_page.locator(".kv").inner_text()
        assert check_times(us_page) >= 1


def test_the_flow_page_agrees_with_the_api(us_page, server, campaign):
    chain_id = campaign["chain"]
    server.settle(chain_id)
    stats = api_chain(server, chain_id)["stats"]
    us_page.goto(f"{server.url}/flows/{campaign['flow']}/")
    cells = us_page.locator(f"#flow-agents tr:has(a[href='/chains/{chain_id}/']) td").all_inner_texts()
    assert cells[1:5] == [num(stats["raw_messages"]), f"{kb(stats['raw_bytes'])} → {kb(stats['view_bytes'])}",
                          num(stats["view_tokens"]), str(stats["compactions"])]
    check_times(us_page)
