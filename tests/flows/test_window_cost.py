"""What the window-aware strategy would have spent on a chain (issue 25 item 5): a replay of the chain's raw
history, cached and extended as the chain grows, shown on the chain page and per chain on the flow page."""
from __future__ import annotations

import re
from dataclasses import replace

import pytest

from flows.engine import COMPACTION_SYSTEM_PROMPT, SUMMARY_SYSTEM_PROMPT, text_tokens
from flows.ingest import chain_append
from flows.models import LLMCall, ModelWindow, Outcome, SummarizerSettings, SummaryEvent
from flows.pipeline import window_estimate, window_estimates_clear, window_estimates_wait, window_replay
from tests.flows.pipeline_support import turn

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _cold_replays():
    window_estimates_clear()
    yield
    window_estimates_wait(timeout=60)
    window_estimates_clear()


def _rounds(chain, first: int, rounds: int, *, output_bytes: int = 2500) -> None:
    messages = [] if first else [{"role": "system", "content": "You are a pentester."}, turn(0)[0]]
    messages += [m for i in range(first, first + rounds) for m in turn(i, output_bytes=output_bytes)[1:3]]
    chain_append(chain=chain, messages=messages)


def _chain(make_chain, window: int = 8_000):
    chain = make_chain(model_name="lab-model")
    ModelWindow.objects.update_or_create(model="lab-model", defaults={"context_window": window,
                                                                      "max_output_tokens": 1000})
    return chain


def test_a_chain_that_fits_the_window_would_cost_nothing(make_chain):
    chain = _chain(make_chain, window=128_000)
    _rounds(chain, 0, 6)
    chain.refresh_from_db()
    estimate = window_estimate(chain=chain)
    assert (estimate.state, estimate.calls, estimate.input_tokens, estimate.refused) == ("ready", 0, 0, 0)
    assert estimate.turns >= 1 and estimate.window_tokens == 128_000


def test_a_long_chain_is_estimated_and_a_grown_chain_replays_only_its_new_turns(make_chain, monkeypatch):
    chain = _chain(make_chain)
    # tool rounds only, which local folds fold without a call: every fold by the model, so there is a cost
    SummarizerSettings.objects.create(profile=chain.agent.profile, flow=chain.agent.flow, window_local_folds=False)
    _rounds(chain, 0, 16)
    chain.refresh_from_db()
    first = window_estimate(chain=chain, usd_per_input_token=0.000002)
    assert first.state == "ready" and first.calls >= 1 and first.input_tokens > 0
    assert first.usd == pytest.approx(first.input_tokens * 0.000002)
    again = window_estimate(chain=chain, usd_per_input_token=0.000002)
    assert first.replayed == chain.last_seq and again.replayed == 0  # cached: nothing replayed again ...
    assert replace(again, replayed=first.replayed) == first  # ... and the same figures
    replayed: list[int] = []
    original = window_replay._turn
    monkeypatch.setattr(window_replay, "_turn", lambda state, turn, *a: (replayed.append(len(turn)),
                                                                          original(state, turn, *a)))
    _rounds(chain, 16, 2)
    chain.refresh_from_db()
    grown = window_estimate(chain=chain)
    assert grown.turns > first.turns and sum(replayed) == 4  # the two new rounds only, not the history again
    assert grown.calls >= first.calls and grown.input_tokens >= first.input_tokens


def test_an_unknown_window_says_so(make_chain):
    chain = make_chain(model_name="no-such-model-anywhere")
    _rounds(chain, 0, 3)
    chain.refresh_from_db()
    assert window_estimate(chain=chain).state == "unknown_window"


@pytest.mark.django_db(transaction=True)  # the background thread reads the chain on its own connection
def test_a_long_history_is_replayed_in_the_background_not_on_the_request(make_chain, monkeypatch):
    monkeypatch.setattr(window_replay, "SYNC_MESSAGES", 10)
    chain = _chain(make_chain)
    _rounds(chain, 0, 16)
    chain.refresh_from_db()
    assert window_estimate(chain=chain).state == "pending"
    assert window_estimates_wait(timeout=60)
    assert window_estimate(chain=chain).state == "ready"


def _priced(chain) -> None:
    event = SummaryEvent.objects.create(chain=chain, trigger="turn", outcome=Outcome.OK, calls=4)
    LLMCall.objects.create(event=event, prompt_tokens=10_000, cost_usd=0.05)


def test_the_chain_page_shows_what_the_window_strategy_would_have_spent(client_for, make_chain):
    chain = _chain(make_chain)
    _rounds(chain, 0, 16)
    _priced(chain)
    chain.refresh_from_db()
    estimate = window_estimate(chain=chain, usd_per_input_token=0.05 / 10_000)
    body = client_for.get(f"/chains/{chain.pk}/").content.decode()
    tile = body[body.index('id="window-cost"'):]
    tile = tile[:tile.index("</div>")]
    assert 'data-window-cost="ready"' in tile
    assert f"{estimate.calls:,} call" in tile and f"{estimate.input_tokens:,} input tokens" in tile
    assert f"${estimate.usd:.4f}" in tile
    panel = client_for.get(f"/chains/{chain.pk}/view-panel/").content.decode()  # the live panel carries it too
    assert 'id="window-cost"' in panel


def test_the_flow_page_lists_each_chain_with_its_cost_and_the_window_estimate(client_for, make_chain):
    chain = _chain(make_chain)
    _rounds(chain, 0, 16)
    _priced(chain)
    other = make_chain(flow=chain.agent.flow, agent_type="coder")
    _rounds(other, 0, 2)
    body = client_for.get(f"/flows/{chain.agent.flow.pk}/").content.decode()
    table = body[body.index('id="chain-costs"'):]
    table = table[:table.index("</table>")]
    row = re.search(rf'<tr data-chain-id="{chain.pk}">(.*?)</tr>', table, re.S)
    assert row is not None
    assert "4" in row.group(1) and "10,000" in row.group(1) and "$0.0500" in row.group(1)
    assert 'data-window-cost="ready"' in row.group(1)
    other_row = re.search(rf'<tr data-chain-id="{other.pk}">(.*?)</tr>', table, re.S)
    assert other_row is not None and "0 calls · 0 input tokens" in other_row.group(1)  # it fits: nothing to spend


def test_agent_text_in_the_cost_table_is_escaped(client_for, make_chain):
    chain = _chain(make_chain)
    chain_append(chain=chain, messages=[{"role": "user", "content": "<script>alert(1)</script>"}])
    body = client_for.get(f"/flows/{chain.agent.flow.pk}/").content.decode()
    assert "<script>alert(1)</script>" not in body


@pytest.mark.django_db(transaction=True)  # the background thread reads the chains on its own connection
def test_the_flow_page_replays_at_most_one_budget_of_messages_on_the_request(client_for, make_chain, monkeypatch):
    monkeypatch.setattr(window_replay, "SYNC_MESSAGES", 40)
    monkeypatch.setattr("flows.pages.chain_costs.SYNC_MESSAGES", 40)
    first = _chain(make_chain)
    _rounds(first, 0, 16)  # 34 messages: within the budget
    second = make_chain(flow=first.agent.flow, agent_type="coder")
    _rounds(second, 0, 16)  # 34 more: past what the first left, so replayed in the background
    body = client_for.get(f"/flows/{first.agent.flow.pk}/").content.decode()
    states = dict(re.findall(r'<tr data-chain-id="(\d+)">.*?data-window-cost="(\w+)"', body, re.S))
    assert sorted(states.values()) == ["pending", "ready"]
    assert window_estimates_wait(timeout=60)
    body = client_for.get(f"/flows/{first.agent.flow.pk}/").content.decode()
    assert set(re.findall(r'data-window-cost="(\w+)"', body[body.index('id="chain-costs"'):])) == {"ready"}


def test_the_estimate_counts_the_system_prompt_each_call_is_sent_with():
    counter = window_replay.input_counter("gpt-4o")
    prompt = "<instructions>x</instructions>\n\n<messages>\nran nmap on 10.0.0.5\n</messages>"
    counter(prompt)
    counter.with_system(COMPACTION_SYSTEM_PROMPT)(prompt)
    assert counter.calls == 2
    assert counter.input == (text_tokens(SUMMARY_SYSTEM_PROMPT, model="gpt-4o")
                             + text_tokens(COMPACTION_SYSTEM_PROMPT, model="gpt-4o")
                             + 2 * text_tokens(prompt, model="gpt-4o"))
