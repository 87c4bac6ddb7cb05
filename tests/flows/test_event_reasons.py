"""Issue 23 item 4: every event stores why it ran, in words and numbers, and the pages show it (escaped)."""
from __future__ import annotations

import re

import pytest

from flows.ingest import chain_append
from flows.models import ModelWindow, Outcome, SummaryEvent
from flows.pipeline import chain_fit, chain_summarize
from flows.pipeline.fitting import fit_reason, tokens_words
from tests.flows.pipeline_support import PipelineSummarizer, grow, small_budgets, turn, use_summarizer

pytestmark = pytest.mark.django_db


def test_tokens_read_as_a_person_reads_them():
    assert [tokens_words(n) for n in (812, 15_234, 2_000_000)] == ["812", "15.2k", "2.00M"]


def test_a_fit_reason_names_the_view_the_reserve_and_the_window():
    assert fit_reason(tokens=15_234, reserve=2_000, window=16_384, trigger="window", observed_tokens=None) == \
        "view 15.2k tokens + 2.0k reserve > window 16.4k"
    assert "40.0k tokens observed" in fit_reason(tokens=9_000, reserve=1_000, window=32_000, trigger="overflow",
                                                 observed_tokens=40_000)


def test_a_summarization_that_ran_says_which_rule_fired(make_chain, client_for):
    use_summarizer(PipelineSummarizer())
    chain = make_chain()
    small_budgets(chain)
    grow(chain, range(6))
    chain_summarize(chain_id=chain.pk)
    event = SummaryEvent.objects.filter(chain=chain, outcome=Outcome.OK).order_by("-id").first()
    assert event is not None and event.calls > 0
    assert re.search(r"> (?:keep_qa_sections|last_sec_bytes|max_bp_bytes|max_qa_sections|max_qa_bytes) [\d,]+",
                     event.reason), event.reason
    page = client_for.get(f"/chains/{chain.pk}/events/{event.pk}/").content.decode()
    assert "<dt>Why</dt>" in page and event.reason.split(":")[0].replace(">", "&gt;") in page


def test_a_window_fit_records_the_token_arithmetic(make_chain):
    use_summarizer(PipelineSummarizer())
    chain = make_chain(model_name="tiny-test-model")
    small_budgets(chain, last_sec_bytes=64 * 1024, max_bp_bytes=16 * 1024, max_qa_bytes=256 * 1024,
                  max_qa_sections=100, keep_recent_tokens=1500)
    ModelWindow.objects.create(model="tiny-test-model", context_window=8000, max_output_tokens=500)
    rounds = [turn(i, output_bytes=2500)[1:3] for i in range(12)]
    chain_append(chain=chain, messages=[{"role": "system", "content": "You are a pentester."}, turn(0)[0],
                                        *[m for pair in rounds for m in pair]])
    chain_summarize(chain_id=chain.pk)
    event = SummaryEvent.objects.get(chain=chain, trigger="window")
    assert event.outcome == Outcome.OK
    assert re.fullmatch(r"view [\d.]+k tokens \+ [\d.,k]+ reserve > window 8\.0k", event.reason), event.reason


def test_a_forced_overflow_fit_names_the_observed_count(make_chain):
    use_summarizer(PipelineSummarizer())
    chain = make_chain(model_name="tiny-test-model")
    small_budgets(chain, last_sec_bytes=64 * 1024, max_bp_bytes=16 * 1024, max_qa_bytes=256 * 1024,
                  max_qa_sections=100, keep_recent_tokens=1000)
    ModelWindow.objects.create(model="tiny-test-model", context_window=32000, max_output_tokens=1000)
    grow(chain, range(8), output_bytes=2000)
    chain_summarize(chain_id=chain.pk)
    event = chain_fit(chain_id=chain.pk, trigger="overflow", observed_tokens=40000)
    assert event.outcome == Outcome.OK and "40.0k tokens observed" in event.reason
