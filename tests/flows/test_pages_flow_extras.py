"""The flow page's memory-note filter, the summarizer's cost on the flows list and the flow page, and the
timeline fragment the live flow page re-reads."""
from __future__ import annotations

import pytest

from flows.models import LLMCall, MemoryNote, Outcome, SummaryEvent, Trigger

pytestmark = pytest.mark.django_db


@pytest.fixture
def flow_with_notes(make_chain, tool_round):
    chain = make_chain(tool_round)
    flow = chain.agent.flow
    for kind, text in [("host", "10.10.5.23"), ("host", "10.10.5.24"), ("credential", "admin:<Acme1234!>"),
                       ("decision", "skip the web port")]:
        MemoryNote.objects.create(flow=flow, chain=chain, kind=kind, text=text)
    return chain


def test_notes_filter_by_kind_and_text(session_client, flow_with_notes):
    url = f"/flows/{flow_with_notes.agent.flow_id}/"
    body = session_client.get(url, {"kind": "host"}).content.decode()
    assert "10.10.5.23" in body and "10.10.5.24" in body and "skip the web port" not in body and "2 of 4" in body
    body = session_client.get(url, {"note_q": "ACME"}).content.decode()
    assert "admin:&lt;Acme1234!&gt;" in body and "10.10.5.23" not in body
    body = session_client.get(url, {"kind": "host", "note_q": "zzz"}).content.decode()
    assert "No note matches." in body


def test_an_unknown_kind_or_an_overlong_query_is_ignored_or_cut_not_an_error(session_client, flow_with_notes):
    url = f"/flows/{flow_with_notes.agent.flow_id}/"
    response = session_client.get(url, {"kind": "<script>", "note_q": "1" * 5000})
    assert response.status_code == 200 and "<script>" not in response.content.decode()


def record_cost(chain, usd: float) -> None:
    event = SummaryEvent.objects.create(chain=chain, trigger=Trigger.TURN, outcome=Outcome.OK)
    LLMCall.objects.create(event=event, model="gpt-4o-mini", cost_usd=usd)


def test_cost_is_shown_per_flow_on_the_list_and_the_flow_page(session_client, make_chain, tool_round):
    chain = make_chain(tool_round)
    record_cost(chain, 0.0125)
    record_cost(chain, 0.0005)
    other = make_chain(tool_round, title="cheap flow")
    listing = session_client.get("/").content.decode()
    assert "$0.0130" in listing and "$0.0000" in listing
    page = session_client.get(f"/flows/{chain.agent.flow_id}/").content.decode()
    assert '<b id="flow-cost">$0.0130</b>' in page and "(2 model calls)" in page
    assert "$0.0000" in session_client.get(f"/flows/{other.agent.flow_id}/").content.decode()


def test_the_timeline_fragment_lists_the_flows_events_and_the_page_names_its_flow_socket(session_client, make_chain,
                                                                                         tool_round):
    chain = make_chain(tool_round)
    event = SummaryEvent.objects.create(chain=chain, trigger=Trigger.MANUAL, outcome=Outcome.OK,
                                        instructions="<b>focus</b>")
    fragment = session_client.get(f"/flows/{chain.agent.flow_id}/timeline/").content.decode()
    assert fragment.startswith('<div id="flow-timeline"') and f'data-event-id="{event.pk}"' in fragment
    assert "&lt;b&gt;focus&lt;/b&gt;" in fragment and "<html" not in fragment
    page = session_client.get(f"/flows/{chain.agent.flow_id}/").content.decode()
    assert f'data-flow-id="{chain.agent.flow_id}"' in page and "js/flow.js" in page


def test_another_users_timeline_is_404(session_client, make_chain, tool_round, other_user):
    chain = make_chain(tool_round, owner=other_user)
    assert session_client.get(f"/flows/{chain.agent.flow_id}/timeline/").status_code == 404
