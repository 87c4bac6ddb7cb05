"""Memory flush (compaction.md §8): facts leaving the view are saved as flow notes before compaction."""
from __future__ import annotations

import pytest

from flows.models import MemoryNote, Outcome
from flows.pipeline import chain_compact
from flows.pipeline.memory import facts_in, memory_flush
from tests.flows.pipeline_support import PipelineSummarizer, grow, small_budgets, use_summarizer

pytestmark = pytest.mark.django_db

LEAKY = [
    {"role": "user", "content": "Check the web server at http://10.10.5.23:8080/admin and report."},
    {"role": "tool", "tool_call_id": "call_1",
     "content": "login: admin   password: S3cr3t!\nfound /var/www/html/config.php\nCVE-2021-41773 applies"},
]


def test_it_finds_hosts_credentials_and_identifiers():
    facts = facts_in(LEAKY)
    assert ("credential", "credential: admin:S3cr3t!") in facts
    assert ("host", "10.10.5.23:8080") in facts or ("host", "http://10.10.5.23:8080/admin") in facts
    assert ("identifier", "/var/www/html/config.php") in facts
    assert ("identifier", "CVE-2021-41773") in facts


def test_flushing_the_same_span_twice_adds_nothing(make_chain, tool_round):
    chain = make_chain(tool_round)
    first = memory_flush(chain=chain, event=None, leaving=LEAKY)
    second = memory_flush(chain=chain, event=None, leaving=LEAKY)
    assert first > 0 and second == 0
    assert MemoryNote.objects.filter(flow=chain.agent.flow).count() == first


def test_a_compaction_saves_what_leaves_the_view(make_chain, monkeypatch):
    use_summarizer(PipelineSummarizer())
    chain = make_chain()
    small_budgets(chain, keep_recent_tokens=300)
    grow(chain, range(5))
    event = chain_compact(chain_id=chain.pk)
    assert event.outcome == Outcome.OK, event.reason
    notes = set(MemoryNote.objects.filter(flow=chain.agent.flow).values_list("text", flat=True))
    assert "10.0.0.1" in notes  # the host of the first turn, which left the view
    assert MemoryNote.objects.filter(event=event).exists()


def test_with_memory_flush_off_nothing_is_saved(make_chain, monkeypatch):
    use_summarizer(PipelineSummarizer())
    chain = make_chain()
    small_budgets(chain, keep_recent_tokens=300, memory_flush=False)
    grow(chain, range(5))
    assert chain_compact(chain_id=chain.pk).outcome == Outcome.OK
    assert not MemoryNote.objects.exists()
