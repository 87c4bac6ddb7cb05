"""Readable events and flows: the events filter (skipped runs hidden by default), flows newest activity first
with a status from what happened, and search across flows from the flows list."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from hypothesis import given
from hypothesis import strategies as st

from flows.ingest import chain_append
from flows.models import Chain, Flow, FlowStatus, MemoryNote, Outcome, SummaryEvent, Trigger
from flows.pages.flow_activity import ACTIVE_SECONDS, flow_activity
from flows.pages.selectors import flow_agents

pytestmark = pytest.mark.django_db


def _event(chain: Chain, outcome: str, trigger: str = Trigger.TURN, reason: str = "") -> SummaryEvent:
    return SummaryEvent.objects.create(chain=chain, trigger=trigger, outcome=outcome, reason=reason)


def _event_ids(html: str) -> set[int]:
    import re
    return {int(n) for n in re.findall(r'data-event-id="(\d+)"', html)}


def test_the_chain_page_hides_skipped_events_by_default_and_says_how_many(session_client, make_chain, tool_round):
    chain = make_chain(tool_round)
    ok, skipped = _event(chain, Outcome.OK), _event(chain, Outcome.SKIPPED, reason="view fits")
    page = session_client.get(f"/chains/{chain.pk}/").content.decode()
    assert _event_ids(page) == {ok.pk}
    assert "1 event hidden" in page and "ev_skipped=1" in page
    assert "2 events" in page  # the stat card counts every event whatever the filter
    shown = session_client.get(f"/chains/{chain.pk}/?ev_skipped=1").content.decode()
    assert _event_ids(shown) == {ok.pk, skipped.pk}


def test_events_filter_by_kind_and_outcome_and_ignore_unknown_values(session_client, make_chain, tool_round):
    chain = make_chain(tool_round)
    turn, manual = _event(chain, Outcome.OK), _event(chain, Outcome.FAILED, Trigger.MANUAL, "<b>boom</b>")
    skipped = _event(chain, Outcome.SKIPPED)
    get = lambda q: session_client.get(f"/chains/{chain.pk}/?{q}").content.decode()  # noqa: E731
    assert _event_ids(get("ev_kind=manual")) == {manual.pk}
    assert _event_ids(get("ev_outcome=skipped")) == {skipped.pk}  # asking for skipped shows them
    assert _event_ids(get("ev_outcome=failed")) == {manual.pk}
    assert _event_ids(get("ev_kind=<script>&ev_outcome=nope")) == {turn.pk, manual.pk}
    assert "&lt;b&gt;boom&lt;/b&gt;" in get("ev_kind=manual")
    assert "No event matches the filter." in get("ev_kind=overflow")
    assert get("ev_kind=manual&role=tool").count('name="role" value="tool"') == 1  # other filters ride along


def test_the_flow_timeline_and_its_live_fragment_hide_skipped_events(session_client, make_chain, tool_round):
    chain = make_chain(tool_round)
    ok, skipped = _event(chain, Outcome.OK), _event(chain, Outcome.SKIPPED)
    flow_id = chain.agent.flow_id
    page = session_client.get(f"/flows/{flow_id}/").content.decode()
    assert _event_ids(page) == {ok.pk}  # rendered with the page, not only after the first live refresh
    assert _event_ids(session_client.get(f"/flows/{flow_id}/timeline/").content.decode()) == {ok.pk}
    fragment = session_client.get(f"/flows/{flow_id}/timeline/?ev_skipped=1").content.decode()
    assert _event_ids(fragment) == {ok.pk, skipped.pk}
    assert f'data-timeline-url="/flows/{flow_id}/timeline/?ev_skipped=1"' in \
        session_client.get(f"/flows/{flow_id}/?ev_skipped=1").content.decode()


def test_flows_are_listed_by_last_activity_with_what_they_are_doing(session_client, make_chain, tool_round):
    old, new, failed = make_chain(tool_round), make_chain(tool_round), make_chain(tool_round)
    long_ago = timezone.now() - timedelta(hours=3)
    Flow.objects.filter(pk=old.agent.flow_id).update(updated_at=long_ago)
    Chain.objects.filter(pk=old.pk).update(updated_at=long_ago)
    Flow.objects.filter(pk=new.agent.flow_id).update(title="newest", status=FlowStatus.CREATED)
    _event(failed, Outcome.FAILED)
    Flow.objects.filter(pk=failed.agent.flow_id).update(updated_at=long_ago)
    Chain.objects.filter(pk=failed.pk).update(updated_at=long_ago - timedelta(hours=1))
    page = session_client.get("/").content.decode()
    order = sorted((page.index(f'href="/flows/{c.agent.flow_id}/"'), c) for c in (old, new, failed))
    assert [c.pk for _, c in order][:2] in ([new.pk, failed.pk], [failed.pk, new.pk])  # the event is newest
    assert order[-1][1].pk == old.pk
    assert page.count('data-activity="active"') == 1 and page.count('data-activity="failed"') == 1
    assert page.count('data-activity="idle"') == 1 and "idle since" in page


@given(status=st.sampled_from(FlowStatus.values), outcome=st.sampled_from([None, *Outcome.values]),
       age=st.integers(min_value=0, max_value=10 * ACTIVE_SECONDS))
def test_a_flows_activity_follows_its_rows_not_only_its_stored_status(status, outcome, age):
    now = timezone.now()
    activity = flow_activity(status=status, last_activity=now - timedelta(seconds=age), newest_event_outcome=outcome,
                             now=now)
    if status == FlowStatus.FAILED or outcome == Outcome.FAILED:
        assert activity.state == "failed"
    elif status == FlowStatus.FINISHED:
        assert activity.state == "finished"
    else:  # created / running / waiting say nothing by themselves: what was written last does
        assert activity.state == ("active" if age <= ACTIVE_SECONDS else "idle")


def test_search_finds_message_text_notes_and_hashes_in_your_flows_only(session_client, make_chain, tool_round,
                                                                        other_user):
    mine = make_chain(tool_round + [{"role": "user", "content": "the NTLM hash is 8846f7eaee8fb117ad06bdd830b7586c"}])
    theirs = make_chain(tool_round + [{"role": "user", "content": "8846f7eaee8fb117ad06bdd830b7586c too"}],
                        owner=other_user)
    MemoryNote.objects.create(flow=mine.agent.flow, chain=mine, kind="host", text="dc01.<i>essos</i>.local")
    Chain.objects.filter(pk=mine.pk).update(head_hash="abcdef0123456789" * 4)
    page = session_client.get("/?q=8846f7eaee8fb117").content.decode()
    assert f'/chains/{mine.pk}/#m-{mine.last_seq}' in page and f"/chains/{theirs.pk}/" not in page
    notes = session_client.get("/?q=essos").content.decode()
    assert 'data-kind="note"' in notes and "&lt;i&gt;essos&lt;/i&gt;" in notes and "<i>essos" not in notes
    hashes = session_client.get("/?q=ABCDEF01").content.decode()
    assert 'data-kind="chain"' in hashes and f"/chains/{mine.pk}/" in hashes
    assert "Nothing in your flows matches." in session_client.get("/?q=no-such-text-anywhere").content.decode()
    assert session_client.get("/?q=" + "x" * 5000).status_code == 200  # long queries are cut, not an error


def test_an_agents_activity_is_its_newest_message_not_a_later_write_of_its_chain(make_flow, make_agent, tool_round):
    flow = make_flow()
    lead, searcher = make_agent(flow=flow, agent_type="primary_agent"), make_agent(flow=flow, agent_type="searcher")
    lead_chain, searcher_chain = (a.chains.get(is_active=True) for a in (lead, searcher))
    chain_append(chain=lead_chain, messages=tool_round)
    chain_append(chain=searcher_chain, messages=tool_round[:2])
    assert [a["agent"].agent_type for a in flow_agents(flow=flow)] == ["searcher", "primary_agent"]
    # the lead's summarization lands after the searcher's turn: a write of its chain, not something the agent did
    Chain.objects.filter(pk=lead_chain.pk).update(summary_queued_at=None, updated_at=timezone.now())
    assert [a["agent"].agent_type for a in flow_agents(flow=flow)] == ["searcher", "primary_agent"]
