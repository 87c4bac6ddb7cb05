"""The server-rendered pages: login, visibility, the chain page's side-by-side layout, filters and paging."""
from __future__ import annotations

import re

import pytest
from django.test import Client

from flows.ingest import chain_append
from flows.models import ChainView, ModelWindow, SummaryEvent
from flows.pages.selectors import PAGE_SIZE_MESSAGES
from tests.app_fixtures import call

pytestmark = pytest.mark.django_db

HOSTILE = "<script>alert(1)</script><img src=x onerror=alert(1)>"
SUMMARY_CALL = "call_SUMMARYSUMMARYSUMMARY0"


@pytest.fixture
def hostile_chain(make_chain):
    return make_chain([
        {"role": "system", "content": "You are a pentester."},
        {"role": "user", "content": "scan 10.10.5.23"},
        {"role": "assistant", "content": None, "tool_calls": [call("call_aaaaaaaaaaaaaaaaaaaaaaaa", "nmap")]},
        {"role": "tool", "tool_call_id": "call_aaaaaaaaaaaaaaaaaaaaaaaa", "content": HOSTILE},
        {"role": "assistant", "content": "done " + HOSTILE},
    ])


def summarized_view(chain) -> ChainView:
    """A view where seqs 3-5 became one summary pair (what the pipeline writes after a turn)."""
    messages = [
        {"role": "system", "content": "You are a pentester."},
        {"role": "user", "content": "scan 10.10.5.23"},
        {"role": "assistant", "content": None, "tool_calls": [call(SUMMARY_CALL, "execute_task_and_return_summary")]},
        {"role": "tool", "tool_call_id": SUMMARY_CALL, "name": "execute_task_and_return_summary",
         "content": "nmap found port 22 " + HOSTILE},
    ]
    return ChainView.objects.create(chain=chain, version=1, messages=messages, lineage=[[1], [2], [3, 4, 5], [3, 4, 5]],
                                    raw_seq_to=5, byte_size=300, token_count=90)


def test_pages_require_login(hostile_chain):
    anon = Client()
    for url in ["/", f"/flows/{hostile_chain.agent.flow_id}/", f"/chains/{hostile_chain.pk}/", "/settings/",
                f"/chains/{hostile_chain.pk}/view-panel/"]:
        response = anon.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/"), url


def test_login_page_logs_a_user_in(user):
    c = Client(enforce_csrf_checks=True)
    page = c.get("/accounts/login/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.content.decode()).group(1)
    response = c.post("/accounts/login/", {"username": "alice", "password": "correct-horse-battery-1",
                                           "csrfmiddlewaretoken": token})
    assert response.status_code == 302 and c.get("/").status_code == 200


def test_users_see_only_their_own_flows(client_for, make_flow, other_user, staff_user):
    make_flow(title="mine")
    theirs = make_flow(owner=other_user, title="theirs")
    body = client_for.get("/").content.decode()
    assert "mine" in body and "theirs" not in body
    assert client_for.get(f"/flows/{theirs.pk}/").status_code == 404
    staff = Client()
    staff.force_login(staff_user)
    assert "theirs" in staff.get("/").content.decode()
    assert staff.get(f"/flows/{theirs.pk}/").status_code == 200


def test_another_users_chain_is_404_everywhere(make_chain, other_user, client_for, tool_round):
    from flows.ingest.create import agent_create, flow_create

    flow = flow_create(owner=other_user, title="x")
    chain = agent_create(flow=flow, agent_type="pentester").chains.get()
    chain_append(chain=chain, messages=tool_round)
    for url in [f"/chains/{chain.pk}/", f"/chains/{chain.pk}/view-panel/", f"/chains/{chain.pk}/messages/1.txt"]:
        assert client_for.get(url).status_code == 404, url
    assert client_for.post(f"/chains/{chain.pk}/compact/").status_code == 404


def test_agent_text_is_escaped_on_the_chain_page(client_for, hostile_chain):
    summarized_view(hostile_chain)
    body = client_for.get(f"/chains/{hostile_chain.pk}/").content.decode()
    assert "<script>alert" not in body and "<img src=x" not in body
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body


def test_each_message_shows_role_tool_bytes_and_tokens(client_for, hostile_chain):
    body = client_for.get(f"/chains/{hostile_chain.pk}/").content.decode()
    row = body[body.index('id="m-4"'):body.index('id="m-5"')]
    assert 'class="role">tool<' in row and 'class="tool">nmap<' in row
    assert re.search(r"\d+ B · \d+ tok", row)


def test_summary_pairs_are_marked_and_point_at_what_they_replaced(client_for, hostile_chain):
    view = summarized_view(hostile_chain)
    body = client_for.get(f"/chains/{hostile_chain.pk}/").content.decode()
    assert body.count("summary-mark") == 2  # the summary call and its result
    assert 'data-lineage="3-5"' in body and "replaces 3 raw messages (seq 3-5)" in body
    selected = client_for.get(f"/chains/{hostile_chain.pk}/?sel=3").content.decode()
    highlighted = set(re.findall(r'class="msg role-\w+ is-lineage" id="m-(\d+)"', selected))
    assert highlighted == {"3", "4", "5"}
    assert view.version == 1


def test_raw_messages_newer_than_the_view_wait_in_the_pending_band(client_for, hostile_chain):
    summarized_view(hostile_chain)
    chain_append(chain=hostile_chain, messages=[{"role": "user", "content": "next step"}])
    body = client_for.get(f"/chains/{hostile_chain.pk}/").content.decode()
    pending = body[body.index('id="pending-band"'):]
    assert 'id="m-6"' in pending and 'id="m-3"' not in pending


def test_filters_by_role_tool_and_text(client_for, hostile_chain):
    url = f"/chains/{hostile_chain.pk}/"
    seqs = lambda r: re.findall(r'id="m-(\d+)"', r.content.decode())  # noqa: E731
    assert seqs(client_for.get(url, {"role": "tool"})) == ["4"]
    assert seqs(client_for.get(url, {"tool": "nmap"})) == ["3", "4"]
    assert seqs(client_for.get(url, {"q": "10.10.5.23"})) == ["2"]
    assert seqs(client_for.get(url, {"role": "nonsense"})) == ["1", "2", "3", "4", "5"]
    assert "No message matches" in client_for.get(url, {"q": "no-such-text"}).content.decode()


def test_long_chains_are_paged_by_seq_windows_newest_first(client_for, make_chain):
    total = PAGE_SIZE_MESSAGES * 2 + 50
    messages = [{"role": "system", "content": "s"}] + [
        {"role": "user" if i % 2 else "assistant", "content": f"message {i}"} for i in range(1, total)]
    chain = make_chain(messages)
    newest = re.findall(r'id="m-(\d+)"', client_for.get(f"/chains/{chain.pk}/").content.decode())
    assert newest[0] == str(PAGE_SIZE_MESSAGES * 2 + 1) and newest[-1] == str(total)
    first = re.findall(r'id="m-(\d+)"', client_for.get(f"/chains/{chain.pk}/?page=1").content.decode())
    assert len(first) == PAGE_SIZE_MESSAGES and first[0] == "1"
    assert client_for.get(f"/chains/{chain.pk}/?page=999").status_code == 200


def test_long_bodies_are_previewed_with_an_expander(client_for, make_chain):
    chain = make_chain([{"role": "system", "content": "s"}, {"role": "user", "content": "x" * 5000}])
    body = client_for.get(f"/chains/{chain.pk}/").content.decode()
    row = body[body.index('id="m-2"'):]
    assert "<details" in row[:400] and "x" * 5000 in row


def test_full_text_endpoint_is_plain_text(client_for, hostile_chain):
    response = client_for.get(f"/chains/{hostile_chain.pk}/messages/4.txt")
    assert response["Content-Type"].startswith("text/plain") and response["X-Content-Type-Options"] == "nosniff"
    assert response.content.decode() == HOSTILE
    assert client_for.get(f"/chains/{hostile_chain.pk}/messages/99.txt").status_code == 404


def test_window_bar_says_when_the_window_is_unknown(client_for, hostile_chain):
    body = client_for.get(f"/chains/{hostile_chain.pk}/").content.decode()
    assert "window unknown: lower the summarizer byte limits for small models" in body


def test_window_bar_shows_view_tokens_reserve_and_window(client_for, make_chain, tool_round):
    ModelWindow.objects.create(model="lab-model", context_window=32000, max_output_tokens=4000)
    chain = make_chain(tool_round, model_name="lab-model")
    ChainView.objects.create(chain=chain, version=1, messages=tool_round, lineage=[[i] for i in range(1, 6)],
                             raw_seq_to=5, byte_size=100, token_count=1234)
    body = client_for.get(f"/chains/{chain.pk}/").content.decode()
    bar = body[body.index('id="window-bar"'):body.index('class="charts"')]
    assert "1,234" in bar and "4,000 reserved output" in bar and "32,000-token window" in bar


def test_events_list_shows_trigger_sizes_and_escaped_reason(client_for, hostile_chain):
    SummaryEvent.objects.create(chain=hostile_chain, trigger="manual", outcome="failed", reason=HOSTILE,
                                bytes_before=4096, bytes_after=1024, calls=2, model="gpt-4o", duration_ms=1500)
    body = client_for.get(f"/chains/{hostile_chain.pk}/").content.decode()
    events = body[body.index('id="events-h"'):]
    assert "manual" in events and "4.0 KB" in events and "1.0 KB" in events and "1,500 ms" in events
    assert "&lt;script&gt;" in events and "<script>alert" not in events


def test_view_panel_is_the_live_part_alone(client_for, hostile_chain):
    body = client_for.get(f"/chains/{hostile_chain.pk}/view-panel/").content.decode()
    assert body.lstrip().startswith('<div id="chain-live"') and "<html" not in body


def test_chart_draws_the_compaction_saw_tooth(client_for, hostile_chain):
    summarized_view(hostile_chain)
    SummaryEvent.objects.create(chain=hostile_chain, trigger="turn", outcome="ok", bytes_before=900, bytes_after=300,
                                tokens_before=250, tokens_after=90, raw_seq_to=5)
    body = client_for.get(f"/chains/{hostile_chain.pk}/").content.decode()
    view_points = re.findall(r'class="series series-view" points="([^"]*)"', body)[0].split()
    xs = [p.split(",")[0] for p in view_points]
    assert xs[-1] == xs[-2]  # before and after at one seq: a vertical drop
    assert len(set(xs)) == len(xs) - 1  # before it, the view followed the raw chain's growth
