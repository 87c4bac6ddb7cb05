"""Issue 23 item 5: every compaction stores its retention score; the events table flags a lost credential or
hash and the chain page charts the score over the chain."""
from __future__ import annotations

import pytest

from flows.engine import with_ledger
from flows.ingest import chain_append
from flows.models import Outcome, SummaryEvent
from flows.pipeline import chain_compact
from tests.flows.pipeline_support import grow, small_budgets, use_summarizer

pytestmark = pytest.mark.django_db

SECRET = "corp.local\\alice:Summer2024!"


def _forgetful(prompt: str) -> str:
    return "The agent scanned some hosts. Latest ask: spray the DC"


def _secret_chain(make_chain):
    chain = make_chain()
    small_budgets(chain, keep_recent_tokens=0)  # a hard checkpoint: every message is replaced by the summary
    grow(chain, range(3))
    chain_append(chain=chain, messages=[
        {"role": "user", "content": "spray the DC"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_sp", "type": "function", "function": {"name": "terminal", "arguments": '{"input": "nxc"}'}}]},
        {"role": "tool", "tool_call_id": "call_sp", "content": f"SMB 10.9.9.9 445 DC01 [+] {SECRET} (Pwn3d!)"},
        {"role": "assistant", "content": "Sprayed."},
    ])
    return chain


def test_a_compaction_that_forgot_a_credential_stores_and_flags_it(make_chain, client_for):
    use_summarizer(_forgetful)
    chain = _secret_chain(make_chain)
    event = chain_compact(chain_id=chain.pk)
    event.refresh_from_db()
    assert event.outcome == Outcome.OK, event.reason
    assert event.retention["lost_secret"] is True
    assert {"kind": "credential", "value": SECRET} in event.retention["lost"]
    assert 0 <= event.retention["score"] < 1
    page = client_for.get(f"/chains/{chain.pk}/").content.decode()
    assert "lost a credential or hash" in page
    assert "Findings and identifiers kept per compaction" in page
    detail = client_for.get(f"/chains/{chain.pk}/events/{event.pk}/").content.decode()
    assert "corp.local\\alice:Summer2024!" in detail and "<dt>Retention</dt>" in detail


def test_a_compaction_that_kept_everything_is_not_flagged(make_chain, client_for):
    use_summarizer(lambda prompt: with_ledger(prompt, _forgetful(prompt)))  # the ledger restores what it forgot
    chain = _secret_chain(make_chain)
    event = chain_compact(chain_id=chain.pk)
    event.refresh_from_db()
    assert event.outcome == Outcome.OK, event.reason
    assert event.retention["lost_secret"] is False and event.retention["score"] == 1.0
    page = client_for.get(f"/chains/{chain.pk}/").content.decode()
    assert "lost a credential or hash</span>" not in page


def test_a_skipped_event_has_no_retention(make_chain):
    use_summarizer(_forgetful)
    chain = make_chain()
    event = chain_compact(chain_id=chain.pk)
    assert SummaryEvent.objects.get(pk=event.pk).retention is None
