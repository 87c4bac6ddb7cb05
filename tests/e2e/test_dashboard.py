"""The dashboard in a real browser: login, live replay with compaction notices, lineage, settings preview,
reconnect and catch-up, and hostile agent text."""
from __future__ import annotations

import os
import random
import re
import shutil

import pytest

from flows.demo.script import demo_turns
from flows.ingest import turn_batches
from tests.e2e.conftest import ROOT, Server, screenshot, wait_for_js

pytestmark = pytest.mark.browser

HOSTILE = "<script>alert(1)</script> and <img src=x onerror=alert(1)>"


def campaign_batches(seed: int = 1) -> list[list[dict]]:
    rng = random.Random(seed)
    messages = [m for kind, batch in demo_turns(rng, "10.10.5.23", first=True) if kind == "append" for m in batch]
    return turn_batches(messages)


def plain_chain(server: Server, title: str) -> int:
    flow = server.api("POST", "/api/flows", {"title": title})
    return server.api("POST", f"/api/flows/{flow['id']}/agents", {"agent_type": "pentester"})["chain_id"]


def rendered_seqs(page) -> list[int]:
    return [int(s) for s in page.eval_on_selector_all(".raw-list .msg", "rows => rows.map(r => r.dataset.seq)")]


def wait_for_seq(page, seq: int) -> None:
    page.wait_for_selector(f"#m-{seq}", state="attached")


def open_live(page, server: Server, chain_id: int) -> None:
    page.goto(f"{server.url}/chains/{chain_id}/")
    page.wait_for_selector("#live-status[data-state='live']")
    page.evaluate("window.__notReloaded = true")


def test_logging_in_shows_the_flows_list(page, server):
    plain_chain(server, "Login check flow")
    page.goto(server.url + "/")
    assert page.locator("h1").inner_text() == "Flows"
    assert page.get_by_text("Login check flow").is_visible()
    screenshot(page, "flows-list")


def test_a_live_replay_appears_and_a_compaction_arrives_without_reload(page, server):
    ids = server.demo_flow("Live replay")
    open_live(page, server, ids["chain"])
    last = 0
    for batch in campaign_batches():
        last = server.append(ids["chain"], batch)["last_seq"]
        wait_for_seq(page, last)
    wait_for_js(page, "window.pentagiLive.state.stats.swaps > 0")  # a summarization landed: view refreshed
    page.wait_for_timeout(1500)  # let the last turn's summarization land before the README picture
    path = screenshot(page, "chain-page")
    if os.environ.get("UPDATE_README_SCREENSHOT"):  # opt-in: a test run must not change tracked files
        shutil.copyfile(path, ROOT / "docs" / "chain-page.png")
    server.api("POST", f"/api/chains/{ids['chain']}/compact", {"instructions": "Focus on credentials"})
    page.locator(".notice", has_text="Compaction").first.wait_for()
    # Its own outcome closes the notice: "complete" when the view shrank, "changed nothing" when everything
    # already sits in the kept recent tail (both are reports; only "failed" would be wrong here).
    page.locator(".notice", has_text=re.compile(r"Compaction #\d+ (complete|changed nothing) \(manual\)")).wait_for()
    assert page.locator(".notice", has_text=re.compile(r"Compaction #\d+ failed \(manual\)")).count() == 0
    assert page.evaluate("window.__notReloaded") is True
    seqs = rendered_seqs(page)  # the raw column reads in seq order, whatever the view merged
    assert seqs == list(range(1, last + 1))
    assert page.locator(".vmsg.is-summary").count() > 0
    screenshot(page, "chain-page-after-compaction")
    page.goto(f"{server.url}/flows/{ids['flow']}/")
    screenshot(page, "flow-page", full_page=True)


def test_selecting_a_summary_highlights_the_raw_messages_it_replaced(page, server):
    ids = server.demo_flow("Lineage")
    for batch in campaign_batches(2)[:10]:
        server.append(ids["chain"], batch)
    page.goto(f"{server.url}/chains/{ids['chain']}/")
    for _ in range(40):  # summarization runs in the server's worker; wait for a view with a summary
        if page.locator(".lineage-link").count():
            break
        page.wait_for_timeout(500)
        page.reload()
    link = page.locator("a.lineage-link").first
    lineage = link.evaluate("a => a.closest('.vmsg').dataset.lineage")
    expected = {s for part in lineage.split(",") for s in _expand(part)} & set(rendered_seqs(page))
    link.click()
    highlighted = {int(s) for s in page.eval_on_selector_all(".msg.is-lineage", "rs => rs.map(r => r.dataset.seq)")}
    assert highlighted == expected and highlighted
    assert link.get_attribute("aria-pressed") == "true"
    link.focus()
    page.keyboard.press(" ")  # keyboard toggles it off again
    assert page.locator(".msg.is-lineage").count() == 0
    page.keyboard.press("Enter")
    assert page.locator(".msg.is-lineage").count() == len(expected)


def _expand(part: str) -> range:
    lo, _, hi = part.partition("-")
    return range(int(lo), int(hi or lo) + 1)


def test_a_settings_preview_changes_the_shown_view_without_saving(page, server):
    ids = server.demo_flow("Preview")
    for batch in campaign_batches(3)[:9]:
        server.append(ids["chain"], batch)
    before = server.db("SELECT count(*) FROM flows_settingschange")
    row_before = server.db("SELECT last_sec_bytes, max_bp_bytes FROM flows_summarizersettings WHERE flow_id = ?",
                           (ids["flow"],))
    page.goto(f"{server.url}/settings/?flow={ids['flow']}&chain={ids['chain']}")
    page.fill("#id_last_sec_bytes", "2048")
    page.fill("#id_max_bp_bytes", "512")
    page.click("#preview-btn")
    page.wait_for_selector("#preview-stats")
    current = page.locator("#preview-diff .diff-cur .vmsg").count()
    new_view = page.locator("#preview-diff .diff-new .vmsg")
    assert new_view.count() > 0
    assert page.locator(".diff-new .is-summary").count() > page.locator(".diff-cur .is-summary").count() \
        or new_view.count() != current
    screenshot(page, "settings-preview")
    assert server.db("SELECT count(*) FROM flows_settingschange") == before
    assert server.db("SELECT last_sec_bytes, max_bp_bytes FROM flows_summarizersettings WHERE flow_id = ?",
                     (ids["flow"],)) == row_before


def test_reconnecting_catches_up_without_missing_or_duplicating(page, server):
    chain = plain_chain(server, "Reconnect")
    batches = campaign_batches(4)
    for batch in batches[:3]:
        server.append(chain, batch)
    open_live(page, server, chain)
    page.evaluate("window.pentagiLive.drop()")  # the socket is cut; the page retries after a back-off
    page.wait_for_selector("#live-status[data-state='reconnecting']")
    last = 0
    for batch in batches[3:6]:
        last = server.append(chain, batch)["last_seq"]
    wait_for_seq(page, last)
    page.wait_for_selector("#live-status[data-state='live']")
    seqs = rendered_seqs(page)
    assert sorted(seqs) == list(range(1, last + 1))  # every seq exactly once
    assert page.evaluate("window.pentagiLive.state.stats.reconnects") >= 1
    assert page.evaluate("window.__notReloaded") is True


def test_hostile_tool_output_renders_as_text_live_and_after_reload(page, server):
    chain = plain_chain(server, "Hostile")
    server.append(chain, [{"role": "system", "content": "pentester"}, {"role": "user", "content": "go"}])
    open_live(page, server, chain)
    call = {"id": "call_HOSTILEHOSTILEHOSTILE01", "type": "function",
            "function": {"name": "terminal", "arguments": '{"input": "curl http://10.10.5.23/"}'}}
    last = server.append(chain, [{"role": "assistant", "content": HOSTILE, "tool_calls": [call]},
                                 {"role": "tool", "tool_call_id": call["id"], "content": HOSTILE}])["last_seq"]
    wait_for_seq(page, last)
    assert HOSTILE in page.locator(f"#m-{last}").inner_text()  # socket path: textContent
    assert page.locator("img[src='x']").count() == 0 and page.locator(".raw-list script").count() == 0
    page.reload()
    wait_for_seq(page, last)
    assert HOSTILE in page.locator(f"#m-{last}").inner_text()  # server path: autoescaped
    assert page.locator("img[src='x']").count() == 0
    page.wait_for_timeout(500)  # give any injected handler a chance to fire (the fixture fails on a dialog)
