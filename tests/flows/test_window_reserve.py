"""One reserve computation (the page's window bar agrees with the engine) and the window check on the pages."""
from __future__ import annotations

import re

import pytest

from flows.config import settings_for, settings_save
from flows.models import ChainView, ModelWindow
from flows.pages.selectors import window_for_model
from flows.pipeline import window_for
from summarizer import effective_reserve

pytestmark = pytest.mark.django_db


def _chain_with_window(make_chain, tool_round, *, window: int, max_output: int = 4000, model: str = "lab-model"):
    ModelWindow.objects.create(model=model, context_window=window, max_output_tokens=max_output)
    chain = make_chain(tool_round, model_name=model)
    ChainView.objects.create(chain=chain, version=1, messages=tool_round, lineage=[[i] for i in range(1, 6)],
                             raw_seq_to=5, byte_size=100, token_count=1234)
    return chain


def _bar_reserve(body: str) -> int:
    bar = body[body.index('id="window-bar"'):]
    return int(re.search(r"\+ ([\d,]+) reserved output", bar).group(1).replace(",", ""))


@pytest.mark.parametrize(("configured", "expected"), [(50_000, 10_000), (20_000, 10_000), (3_000, 3_000),
                                                      (None, 4_000)])
def test_the_window_bar_reserves_what_the_engine_reserves(client_for, make_chain, tool_round, user, configured,
                                                           expected):
    """A configured reserve as large as the 20,000-token window is halved by the engine: the bar shows the same."""
    chain = _chain_with_window(make_chain, tool_round, window=20_000)
    flow = chain.agent.flow
    settings_save(profile="agent", flow=flow, data={"reserve_tokens": configured}, user=user, source="api")
    row = settings_for(profile="agent", flow=flow)
    engine = effective_reserve(20_000, configured, "lab-model", max_output_tokens=4000)
    assert engine == expected
    assert window_for(flow=flow, row=row) == (20_000, expected)
    assert window_for_model("lab-model").reserve(configured) == expected
    assert _bar_reserve(client_for.get(f"/chains/{chain.pk}/").content.decode()) == expected


@pytest.mark.parametrize(("window", "level", "text"), [(8_000, "refuse", "too small for agent work"),
                                                       (16_384, "warn", "is small (below 32,000)"),
                                                       (128_000, None, None)])
def test_the_chain_page_shows_the_window_check(client_for, make_chain, tool_round, window, level, text):
    chain = _chain_with_window(make_chain, tool_round, window=window, max_output=1000)
    body = client_for.get(f"/chains/{chain.pk}/").content.decode()
    if level is None:
        assert "data-window-check" not in body
    else:
        assert f'data-window-check="{level}"' in body and text in body


def test_the_settings_page_checks_the_window_of_the_flow_in_scope(client_for, make_chain, tool_round):
    chain = _chain_with_window(make_chain, tool_round, window=16_384)
    body = client_for.get(f"/settings/?flow={chain.agent.flow.pk}").content.decode()
    assert 'data-window-check="warn"' in body and "lab-model" in body


def test_the_settings_page_checks_the_preview_chains_window_for_the_defaults(client_for, make_chain, tool_round):
    chain = _chain_with_window(make_chain, tool_round, window=8_000)
    body = client_for.get(f"/settings/?chain={chain.pk}").content.decode()
    assert 'data-window-check="refuse"' in body


def test_an_unknown_window_is_not_checked(client_for, make_chain, tool_round):
    chain = make_chain(tool_round, model_name="no-such-model-anywhere")
    assert "data-window-check" not in client_for.get(f"/chains/{chain.pk}/").content.decode()
