"""Phone and narrow widths, measured: at 1440, 1000 and 390 px nothing scrolls sideways, the flows list turns into
cards on a phone, the stat cards share rows at 1000 px, a summary sits where the raw messages it replaced begin,
and the settings preview appears next to (wide) or directly under (stacked) the field being edited."""
from __future__ import annotations

import pytest

from tests.e2e.conftest import Server, screenshot, wait_for_js
from tests.e2e.test_dashboard import campaign_batches

pytestmark = pytest.mark.browser

WIDE, MEDIUM, PHONE = 1440, 1000, 390
HEIGHT = 900
OVERFLOW = "document.documentElement.scrollWidth - document.documentElement.clientWidth"


@pytest.fixture(scope="module")
def summarized(server: Server) -> dict[str, int]:
    """A demo flow (small summarizer limits) after a campaign: it has summaries, events and a long title."""
    ids = server.demo_flow("Narrow widths " + "long-title-" * 6)
    for batch in campaign_batches(seed=5):
        server.append(ids["chain"], batch)
    server.settle(ids["chain"])
    return ids


def boxes(page, selector: str) -> list[dict[str, float]]:
    return page.eval_on_selector_all(selector, "els => els.map(e => { const r = e.getBoundingClientRect(); "
                                               "return {x: r.x, y: r.y, width: r.width, height: r.height}; })")


def rows_of(items: list[dict[str, float]]) -> int:
    """How many visual rows the boxes occupy (boxes whose tops differ by under 2 px share a row)."""
    tops: list[float] = []
    for b in items:
        if not any(abs(b["y"] - t) < 2 for t in tops):
            tops.append(b["y"])
    return len(tops)


@pytest.mark.parametrize("width", [WIDE, MEDIUM, PHONE])
def test_the_flows_list_is_a_table_when_wide_and_cards_on_a_phone(page, server, summarized, width):
    page.set_viewport_size({"width": width, "height": HEIGHT})
    page.goto(server.url + "/")
    assert page.evaluate(OVERFLOW) <= 0
    wrap = page.locator(".flows-wrap")
    assert wrap.evaluate("w => w.scrollWidth - w.clientWidth") <= 0  # no sideways scroll inside the card either
    row = page.locator(".flows-table tbody tr").first
    cells = boxes(page, ".flows-table tbody tr:first-child td")
    card = row.bounding_box()
    assert card is not None
    if width == PHONE:
        assert not page.locator(".flows-table thead").is_visible()
        assert rows_of(cells) == len(cells)  # one label: value line per figure
        assert card["x"] >= 0 and card["x"] + card["width"] <= width
        for cell in cells:
            assert cell["x"] >= card["x"] - 0.5 and cell["x"] + cell["width"] <= card["x"] + card["width"] + 0.5
        raw_view = row.locator("td[data-label='Raw → view']")
        assert raw_view.is_visible() and "→" in raw_view.inner_text()
        screenshot(page, "phone-flows-cards", full_page=True)
    else:
        assert page.locator(".flows-table thead").is_visible()
        assert rows_of(cells) == 1  # a table row: every figure on one line


@pytest.mark.parametrize("width", [WIDE, MEDIUM, PHONE])
def test_the_stat_cards_share_rows_at_every_width(page, server, summarized, width):
    page.set_viewport_size({"width": width, "height": HEIGHT})
    page.goto(f"{server.url}/chains/{summarized['chain']}/")
    assert page.evaluate(OVERFLOW) <= 0
    cards = boxes(page, ".stats > .stat")
    assert len(cards) >= 4
    assert rows_of(cards) <= (len(cards) + 1) // 2  # at least two cards per row, never one per row
    for card in cards:
        assert card["x"] >= 0 and card["x"] + card["width"] <= width


@pytest.mark.parametrize("width", [WIDE, PHONE])
def test_a_summary_sits_where_the_messages_it_replaced_begin(page, server, summarized, width):
    page.set_viewport_size({"width": width, "height": HEIGHT})
    page.goto(f"{server.url}/chains/{summarized['chain']}/")
    band = page.locator(".band-summary:has(.raw-list .msg + .msg)").first  # a summary of several messages
    band.wait_for()
    summary = band.locator(".vmsg.is-summary").first.bounding_box()
    first_raw = band.locator(".raw-list .msg").first.bounding_box()
    last_raw = band.locator(".raw-list .msg").last.bounding_box()
    assert summary is not None and first_raw is not None and last_raw is not None
    if width == PHONE:  # stacked: the summary comes first, above the messages it replaced
        assert summary["y"] + summary["height"] <= first_raw["y"] + 1
    else:  # side by side: level with the first message it replaced
        assert abs(summary["y"] - first_raw["y"]) < 20 and summary["x"] > first_raw["x"] + first_raw["width"] - 1
    assert summary["y"] < last_raw["y"]
    assert page.evaluate(OVERFLOW) <= 0


@pytest.mark.parametrize("width", [WIDE, MEDIUM, PHONE])
def test_the_settings_preview_appears_beside_or_directly_under_the_edited_field(page, server, summarized, width):
    page.set_viewport_size({"width": width, "height": HEIGHT})
    page.goto(f"{server.url}/settings/?flow={summarized['flow']}&chain={summarized['chain']}")
    field = page.locator("#settings-form .setting input[type=number]").nth(6)
    field.scroll_into_view_if_needed()
    value = int(field.input_value() or "0")
    field.fill(str(value + 1))
    wait_for_js(page, "document.body.dataset.preview === 'ready'")
    row = field.locator("xpath=ancestor::div[contains(@class,'setting ')][1]").bounding_box()
    preview = page.locator("#preview").bounding_box()
    assert row is not None and preview is not None
    if width == WIDE:  # two columns: the preview is beside the fields, in sight while editing
        assert preview["x"] >= row["x"] + row["width"]
        assert preview["y"] < HEIGHT and preview["y"] + preview["height"] > 0
    else:  # one column: directly under the field being edited
        assert 0 <= preview["y"] - (row["y"] + row["height"]) < 40
        assert preview["x"] >= 0 and preview["x"] + preview["width"] <= width
    assert page.evaluate(OVERFLOW) <= 0
    screenshot(page, f"settings-preview-{width}")
