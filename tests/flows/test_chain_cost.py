"""The chain page shows what summarizing the chain has cost: calls, model calls, input tokens, USD."""
from __future__ import annotations

import re

import pytest

from flows.models import LLMCall, Outcome, SummaryEvent
from flows.pages.selectors import ChainCost, chain_cost

pytestmark = pytest.mark.django_db


def _event(chain, calls: int) -> SummaryEvent:
    return SummaryEvent.objects.create(chain=chain, trigger="turn", outcome=Outcome.OK, calls=calls)


def test_a_chain_never_summarized_costs_nothing(make_chain, tool_round):
    assert chain_cost(chain=make_chain(tool_round)) == ChainCost()


def test_reported_prompt_tokens_win_over_the_estimate_and_costs_add_up(make_chain, tool_round):
    chain, other = make_chain(tool_round), make_chain(tool_round)
    first, second = _event(chain, 2), _event(chain, 1)
    LLMCall.objects.create(event=first, prompt_tokens=1200, estimated_prompt_tokens=999, cost_usd=0.01)
    LLMCall.objects.create(event=second, prompt_tokens=None, estimated_prompt_tokens=300, cost_usd=0.0025)
    LLMCall.objects.create(event=_event(other, 5), prompt_tokens=50_000, cost_usd=9.0)  # another chain's
    assert chain_cost(chain=chain) == ChainCost(calls=3, llm_calls=2, input_tokens=1500, usd=0.0125)


def test_the_chain_page_shows_the_cost(client_for, make_chain, tool_round):
    chain = make_chain(tool_round)
    LLMCall.objects.create(event=_event(chain, 4), prompt_tokens=2048, cost_usd=0.5)
    body = client_for.get(f"/chains/{chain.pk}/").content.decode()
    tile = body[body.index('id="chain-cost"'):]
    tile = tile[:tile.index("</div></div>")]
    assert "$0.5000" in tile and "4 summarize calls" in tile and "1 to a model" in tile
    assert re.search(r"2,048 input tokens", tile)


def _calls_and_model(html: str, anchor: str) -> tuple[str, str]:
    part = html[html.index(anchor):]
    calls = re.search(r'<span class="event-calls"[^>]*>([^<]*)</span>', part)
    model = re.search(r'<span class="event-model">([^<]*)</span>', part)
    assert calls and model
    return calls.group(1), model.group(1)


@pytest.mark.parametrize(("model_calls", "model"), [(0, "extractive"), (2, "gpt-sum")])
def test_an_events_calls_and_model_read_the_same_on_the_table_the_event_page_and_the_api(
        client_for, api_client, make_chain, tool_round, model_calls, model):
    """Issue 24: the table said "Calls 5, model scripted-pentester" (the flow's model) while the event page said
    "0 model calls, ran extractively". Both now say the summarize calls, how many went to a model, and its name."""
    chain = make_chain(tool_round)
    event = SummaryEvent.objects.create(chain=chain, trigger="turn", outcome=Outcome.OK, calls=5,
                                        model="scripted-pentester")
    for _ in range(model_calls):
        LLMCall.objects.create(event=event, model=model, prompt_tokens=10)
    want = (f"5 summarize calls · {model_calls} to a model", model)
    table = client_for.get(f"/chains/{chain.pk}/").content.decode()
    assert _calls_and_model(table, f'data-event-id="{event.pk}"') == want
    page = client_for.get(f"/chains/{chain.pk}/events/{event.pk}/").content.decode()
    assert _calls_and_model(page, "<h1>") == want
    (found,) = [e for e in api_client.get(f"/api/chains/{chain.pk}/events").json()["events"] if e["id"] == event.pk]
    assert (found["calls"], found["model_calls"]) == (5, model_calls)
    assert found["summarizer_model"] == (model if model_calls else None)
