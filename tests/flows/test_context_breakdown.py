"""The chain's context breakdown (issue 24 item 3): one set of figures for the page's bar and table and the API."""
from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flows.engine import message_tokens
from flows.ingest import chain_append
from flows.models import ChainView, GatewayCall, ModelWindow
from flows.pages.context_breakdown import BAR_UNITS, ContextPart, bar_rects

pytestmark = pytest.mark.django_db

SUMMARY = {"role": "assistant", "content": None, "tool_calls": [{
    "id": "call_s1", "type": "function",
    "function": {"name": "execute_task_and_return_summary", "arguments": '{"question": "summarize"}'}}]}
SUMMARY_RESULT = {"role": "tool", "tool_call_id": "call_s1", "name": "execute_task_and_return_summary",
                  "content": "ssh open on 10.0.0.5; <script>alert(1)</script>"}


def _summarized_chain(make_chain, tool_round, *, window: int | None = 32_000):
    """Raw seqs 1-5 (one tool round) whose view folds seqs 2-4 into a summary pair; then two newer raws."""
    if window:
        ModelWindow.objects.create(model="lab-model", context_window=window, max_output_tokens=4000)
    chain = make_chain(tool_round, model_name="lab-model")
    view = [tool_round[0], tool_round[1], SUMMARY, SUMMARY_RESULT, tool_round[4]]
    ChainView.objects.create(chain=chain, version=1, messages=view, lineage=[[1], [2], [3, 4], [3, 4], [5]],
                             raw_seq_to=5, byte_size=400, token_count=900)
    chain_append(chain=chain, messages=[{"role": "user", "content": "now try the web port"},
                                        {"role": "assistant", "content": "Port 80 serves nginx."}])
    chain.refresh_from_db()
    return chain


def _record_call(chain, user, *, tools: int, schema: int = 0) -> GatewayCall:
    return GatewayCall.objects.create(chain=chain, user=user, model="lab-model", status="ok", budget={
        "window": 32_000, "messages": 900, "tools": tools, "schema": schema, "ratio": 1.0, "prompt": 900 + tools,
        "reserve": 4000, "max_output_asked": None, "max_output_sent": None, "floor": 256, "fits": True})


def _api_context(client_for, chain) -> dict:
    return client_for.get(f"/api/chains/{chain.pk}").json()["context"]


def _parts(context: dict) -> dict[str, int]:
    return {p["key"]: p["tokens"] for p in context["parts"]}


def test_the_parts_add_up_to_the_view_the_newer_raws_and_the_window(client_for, make_chain, tool_round, user):
    chain = _summarized_chain(make_chain, tool_round)
    _record_call(chain, user, tools=1_200, schema=50)
    context = _api_context(client_for, chain)
    parts = _parts(context)
    newer = sum(m.token_count for m in chain.messages.filter(seq__gt=5))
    assert parts["system"] == message_tokens(tool_round[0], model="lab-model")
    assert parts["summaries"] == message_tokens(SUMMARY, model="lab-model") + message_tokens(SUMMARY_RESULT,
                                                                                            model="lab-model")
    assert parts["system"] + parts["summaries"] + parts["recent"] == 900 + newer == context["used"] - 1_250
    assert parts["tools"] == 1_250 and context["last_call"]["tools"] == 1_200
    assert parts["reserve"] == 4_000 and context["window"] == 32_000
    assert context["used"] + parts["reserve"] + parts["free"] == 32_000 and context["free"] == parts["free"]
    assert not context["over"] and context["newer_raw_tokens"] == newer


def test_the_page_shows_the_apis_figures_in_its_table_and_label(client_for, make_chain, tool_round, user):
    chain = _summarized_chain(make_chain, tool_round)
    _record_call(chain, user, tools=700)
    context = _api_context(client_for, chain)
    body = client_for.get(f"/chains/{chain.pk}/").content.decode()
    table = body[body.index('id="context-breakdown"'):body.index("</table>", body.index('id="context-breakdown"'))]
    for part in context["parts"]:
        row = table[table.index(f'data-part="{part["key"]}"'):]
        cells = re.findall(r'<td class="num">([^<]*)</td>', row)[:2]
        assert cells == [f"{part['tokens']:,}", f"{part['percent']}%"], part["key"]
    label = body[body.index('class="wb-label"'):body.index("</div>", body.index('class="wb-label"'))]
    assert f"{context['free']:,} free" in label and f"+ {context['tool_tokens']:,} of tool schemas" in label
    assert "<script>alert(1)" not in body  # the summary's text is agent text


def test_the_bar_draws_each_part_as_its_share_of_the_window(client_for, make_chain, tool_round, user):
    chain = _summarized_chain(make_chain, tool_round)
    _record_call(chain, user, tools=3_200)
    body = client_for.get(f"/chains/{chain.pk}/").content.decode()
    rects = dict(re.findall(r'<rect class="cb-(\w+)" x="\d+" y="0" width="(\d+)"', body))
    assert rects["tools"] == str(round(BAR_UNITS * 3_200 / 32_000)) and rects["reserve"] == "125"
    assert 'style=' not in body[body.index('id="window-bar"'):body.index('id="context-breakdown"')]


def test_without_a_gateway_call_the_tool_schemas_are_zero_and_said_so(client_for, make_chain, tool_round):
    context = _api_context(client_for, _summarized_chain(make_chain, tool_round))
    tools = next(p for p in context["parts"] if p["key"] == "tools")
    assert tools["tokens"] == 0 and tools["note"] == "no gateway call recorded" and context["last_call"] is None


def test_an_unknown_window_gives_the_parts_without_shares(client_for, make_chain, tool_round):
    context = _api_context(client_for, _summarized_chain(make_chain, tool_round, window=None))
    assert context["known"] is False and context["free"] is None and context["reserve"] is None
    assert [p["key"] for p in context["parts"]] == ["system", "summaries", "recent", "tools"]
    assert all(p["percent"] is None for p in context["parts"])


def test_before_any_view_the_raw_chain_is_the_recent_part(client_for, make_chain, tool_round):
    ModelWindow.objects.create(model="lab-model", context_window=32_000, max_output_tokens=4000)
    chain = make_chain(tool_round, model_name="lab-model")
    parts = _parts(_api_context(client_for, chain))
    assert parts["summaries"] == 0 and parts["system"] + parts["recent"] == chain.totals()["tokens"]


def test_an_over_full_window_says_so_and_the_bar_stays_within_it(client_for, make_chain, tool_round, user):
    chain = _summarized_chain(make_chain, tool_round, window=16_000)
    _record_call(chain, user, tools=15_000)
    context = _api_context(client_for, chain)
    assert context["over"] and context["free"] == 0
    body = client_for.get(f"/chains/{chain.pk}/").content.decode()
    assert "over budget: compacts before the next call" in body


@given(st.lists(st.integers(min_value=0, max_value=200_000), min_size=1, max_size=6),
       st.integers(min_value=1, max_value=400_000))
def test_bar_rects_never_overlap_nor_leave_the_bar(tokens, window):
    rects = bar_rects([ContextPart(f"p{i}", "", t, "") for i, t in enumerate(tokens)], window)
    x = 0
    for rect in rects:
        assert rect["x"] == x and rect["width"] >= 0
        x += rect["width"]
    assert x <= BAR_UNITS
