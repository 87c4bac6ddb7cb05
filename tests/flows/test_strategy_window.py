"""The `strategy` setting: PentAGI's byte budgets (default) or the window-aware strategy, per profile and flow."""
from __future__ import annotations

import pytest

from flows.config import SettingsError, settings_for, settings_save, settings_validate
from flows.engine import COMPACTION_SYSTEM_PROMPT, SUMMARY_SYSTEM_PROMPT
from flows.ingest import chain_append
from flows.models import ModelWindow, Outcome, SummaryEvent
from flows.pipeline import chain_preview, chain_summarize, view_current
from flows.pipeline.strategy import window_target_for
from flows.pipeline.summarizers import InputCounter
from tests.flows.pipeline_support import PipelineSummarizer, small_budgets, turn, use_summarizer
from tests.flows.test_pages_settings import csrf_post, form_values

pytestmark = pytest.mark.django_db


def _long_section(chain, rounds: int, *, output_bytes: int = 2500) -> None:
    """One ask and many tool rounds: over small byte budgets long before it is over a 32k window."""
    pairs = [m for i in range(rounds) for m in turn(i, output_bytes=output_bytes)[1:3]]
    chain_append(chain=chain, messages=[{"role": "system", "content": "You are a pentester."}, turn(0)[0], *pairs])


def _chain(make_chain, *, window: int, strategy: str, **overrides):
    chain = make_chain(model_name="lab-model")
    ModelWindow.objects.update_or_create(model="lab-model", defaults={"context_window": window,
                                                                      "max_output_tokens": 1000})
    small_budgets(chain, strategy=strategy, **overrides)
    return chain


def test_the_profiles_default_to_pentagi_and_accept_only_known_strategies():
    assert settings_for(profile="agent").strategy == "pentagi"
    assert settings_for(profile="assistant").strategy == "pentagi"
    with pytest.raises(SettingsError) as exc:
        settings_validate({"strategy": "cheapest"}, base=settings_for(profile="agent"))
    assert "strategy" in exc.value.errors
    with pytest.raises(SettingsError):
        settings_validate({"window_margin_percent": 95}, base=settings_for(profile="agent"))


def test_pentagi_summarizes_by_bytes_where_the_window_strategy_makes_no_call(make_chain):
    use_summarizer(PipelineSummarizer())
    pentagi, window = (_chain(make_chain, window=32_000, strategy=s) for s in ("pentagi", "window"))
    for chain in (pentagi, window):
        _long_section(chain, 8)
    assert chain_summarize(chain_id=pentagi.pk).calls > 0
    event = chain_summarize(chain_id=window.pk)
    assert event.outcome == Outcome.SKIPPED and event.calls == 0
    assert "fits the window's margin" in event.reason
    assert event.settings_snapshot["strategy"] == "window"
    assert len(view_current(chain=window).messages) == 18  # the whole chain, verbatim


def test_the_window_strategy_summarizes_once_the_window_needs_it(make_chain):
    use_summarizer(PipelineSummarizer())
    chain = _chain(make_chain, window=8_000, strategy="window", window_local_folds=False)
    _long_section(chain, 16)
    event = chain_summarize(chain_id=chain.pk)
    assert event.outcome == Outcome.OK and event.calls >= 1
    assert not SummaryEvent.objects.filter(chain=chain, trigger="window").exists()  # no fit needed afterwards
    view = view_current(chain=chain)
    assert view.token_count <= 8_000 - 1_000
    assert view.messages[-2:] == [m for m in turn(15, output_bytes=2500)[1:3]]
    covered = sorted({s for lin in view.lineage for s in lin})
    assert covered == list(range(1, chain.last_seq + 1))  # lineage still accounts for every raw message


def test_a_fold_made_by_the_offline_summarizer_alone_is_a_run_not_a_skip(make_chain):
    use_summarizer(PipelineSummarizer())
    chain = _chain(make_chain, window=8_000, strategy="window")  # window_local_folds: on by default
    _long_section(chain, 16)  # tool rounds only: nothing of the agent's own to condense
    event = chain_summarize(chain_id=chain.pk)
    assert event.outcome == Outcome.OK and event.calls == 0
    assert "offline summarizer" in event.reason and event.settings_snapshot["window_local_folds"] is True
    view = view_current(chain=chain)
    assert view.token_count <= 8_000 - 1_000
    covered = sorted({s for lin in view.lineage for s in lin})
    assert covered == list(range(1, chain.last_seq + 1))


def test_a_flow_override_picks_the_strategy_for_that_flow_only(make_chain, user):
    chain = make_chain(model_name="lab-model")
    settings_save(profile="agent", flow=chain.agent.flow, data={"strategy": "window"}, user=user, source="api")
    assert settings_for(profile="agent", flow=chain.agent.flow).strategy == "window"
    assert settings_for(profile="agent").strategy == "pentagi"


def test_an_unknown_window_falls_back_to_pentagi(make_chain):
    use_summarizer(PipelineSummarizer())
    chain = make_chain(model_name="no-such-model-anywhere")
    small_budgets(chain, strategy="window")
    _long_section(chain, 8)
    assert chain_summarize(chain_id=chain.pk).calls > 0


def test_the_preview_shows_calls_and_input_bytes_of_each_strategy(make_chain):
    chain = _chain(make_chain, window=32_000, strategy="pentagi")
    _long_section(chain, 8)
    pentagi = chain_preview(chain=chain, settings={"strategy": "pentagi"})
    window = chain_preview(chain=chain, settings={"strategy": "window"})
    assert pentagi["stats"]["calls"] > 0 and pentagi["stats"]["input_bytes"] > 0
    assert window["stats"]["calls"] == 0 and window["stats"]["input_bytes"] == 0
    assert window["window"]["strategy"]["triggered"] is False
    assert pentagi["window"]["strategy"] == {"strategy": "pentagi"}


def test_the_previews_input_bytes_count_the_system_prompt_each_call_is_sent_with():
    counter = InputCounter(lambda prompt: "summary", SUMMARY_SYSTEM_PROMPT)
    counter("<messages>ran nmap</messages>")
    counter.with_system(COMPACTION_SYSTEM_PROMPT)("<messages>ran nmap</messages>")
    assert counter.calls == 2
    assert counter.input == (len(SUMMARY_SYSTEM_PROMPT.encode()) + len(COMPACTION_SYSTEM_PROMPT.encode())
                             + 2 * len(b"<messages>ran nmap</messages>"))


def test_the_settings_page_previews_the_window_strategy(csrf_client_for, make_chain):
    chain = _chain(make_chain, window=8_000, strategy="pentagi")
    _long_section(chain, 16)
    defaults = settings_for(profile="agent", flow=chain.agent.flow)
    response = csrf_post(csrf_client_for, f"/settings/?flow={chain.agent.flow_id}", {
        "profile": "agent", "flow": chain.agent.flow_id, "chain": chain.pk, "action": "preview",
        **form_values(defaults, strategy="window")})
    body = response.content.decode()
    assert response.status_code == 200
    assert 'id="preview-strategy"' in body and "was over the trigger" in body
    assert "sent to the summarizer" in body
    assert 'name="window_trigger_percent"' in body and 'name="window_margin_percent"' in body


def test_the_row_sets_the_window_target_and_its_input_bound(make_chain):
    chain = _chain(make_chain, window=32_000, strategy="window", window_trigger_percent=60,
                   window_margin_percent=30, window_input_tokens=1500)
    row = settings_for(profile="agent", flow=chain.agent.flow)
    target = window_target_for(flow=chain.agent.flow, row=row)
    assert (target.window_tokens, target.reserve_tokens) == (32_000, 1_000)
    assert (target.trigger_percent, target.margin_percent, target.input_tokens) == (60, 30, 1500)
    assert target.trigger_tokens == 19_200 and target.target_tokens == 13_440
    assert window_target_for(flow=chain.agent.flow, row=settings_for(profile="agent")) is None  # pentagi
