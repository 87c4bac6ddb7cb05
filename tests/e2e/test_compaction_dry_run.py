"""Issue 24 item 8 in the browser, under the real CSP, at 1440 and 390 px: "Compact now…" → "Preview (dry run)"
shows the summary, what it replaces and the figures before anything is written; Apply queues a compaction that
applies exactly that result; Cancel leaves the chain as it was."""
from __future__ import annotations

import time

import pytest

from tests.e2e.conftest import Server, screenshot
from tests.e2e.test_dashboard import campaign_batches

pytestmark = pytest.mark.browser

FOCUS = 'Keep the credentials <b>found</b> & the open ports'
OVERFLOW = "document.documentElement.scrollWidth - document.documentElement.clientWidth"


@pytest.fixture(scope="module")
def summarized(server: Server) -> dict[str, int]:
    ids = server.demo_flow("Dry run")
    # the demo keeps its newest 4,000 tokens verbatim, about all this campaign's view holds: keep fewer
    server.api("PUT", f"/api/settings/agent?flow={ids['flow']}", {"keep_recent_tokens": 500})
    for batch in campaign_batches(seed=7):
        server.append(ids["chain"], batch)
    server.settle(ids["chain"])
    return ids


def _written(server: Server, chain_id: int) -> tuple[int, int, int]:
    """Events, view versions and memory notes of the chain's flow: what a dry run must not change."""
    events = server.db("SELECT count(*) FROM flows_summaryevent WHERE chain_id = ?", (chain_id,))[0][0]
    views = server.db("SELECT count(*) FROM flows_chainview WHERE chain_id = ?", (chain_id,))[0][0]
    notes = server.db("SELECT count(*) FROM flows_memorynote")[0][0]
    return events, views, notes


def _open_dry_run(page, server: Server, chain_id: int, focus: str) -> None:
    page.goto(f"{server.url}/chains/{chain_id}/")
    page.click("#compact-now > summary")
    page.fill("#compact-instructions", focus)
    with page.expect_navigation(timeout=60_000):  # the dry run is computed while the browser waits
        page.click("#compact-dry-run")
    assert page.locator("#dry-summary").count() == 1, page.url + page.locator("body").inner_text()[:600]


def _manual_event(server: Server, chain_id: int, timeout: float = 60.0) -> tuple[str, str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rows = server.db("SELECT outcome, reason FROM flows_summaryevent WHERE chain_id = ? AND trigger = 'manual' "
                         "ORDER BY id DESC LIMIT 1", (chain_id,))
        if rows and rows[0][0] != "running":
            return rows[0]
        time.sleep(0.25)
    raise AssertionError("the applied compaction did not finish")


@pytest.mark.parametrize("width", [1440, 390])
def test_a_dry_run_shows_what_compact_now_would_do_and_cancel_writes_nothing(page, server, summarized, width):
    chain = summarized["chain"]
    page.set_viewport_size({"width": width, "height": 900})
    before = _written(server, chain)
    _open_dry_run(page, server, chain, FOCUS)
    assert _written(server, chain) == before
    assert page.evaluate(OVERFLOW) <= 0
    assert page.locator(".focus-text").inner_text() == FOCUS  # escaped: shown as typed, no <b> element
    assert page.locator(".focus-text b").count() == 0
    assert page.locator("#dry-summary").inner_text().strip()
    assert "→" in page.locator("#dry-tokens").inner_text() and "→" in page.locator("#dry-bytes").inner_text()
    assert page.locator(".dry-replaced tbody tr").count() >= 1
    apply_box = page.locator("#dry-run-apply-form button").bounding_box()
    assert apply_box is not None and apply_box["x"] + apply_box["width"] <= width
    screenshot(page, f"compaction-dry-run-{width}")
    page.click("#dry-run-cancel")
    page.wait_for_url(f"{server.url}/chains/{chain}/")
    assert _written(server, chain) == before


def test_apply_uses_the_previewed_summary(page, server, summarized):
    chain = summarized["chain"]
    _open_dry_run(page, server, chain, "Focus on the hosts")
    previewed_tokens = page.locator("#dry-tokens").inner_text()
    page.click("#dry-run-apply-form button")
    page.wait_for_url(f"{server.url}/chains/{chain}/")
    assert "applies the summary you previewed" in page.locator(".flash").inner_text()
    outcome, reason = _manual_event(server, chain)
    assert outcome == "ok" and "applied the dry run's result" in reason, reason
    after = server.db("SELECT tokens_before, tokens_after FROM flows_summaryevent WHERE chain_id = ? AND "
                      "trigger = 'manual' ORDER BY id DESC LIMIT 1", (chain,))[0]
    assert previewed_tokens.replace(",", "").split(" → ") == [str(after[0]), str(after[1])]
