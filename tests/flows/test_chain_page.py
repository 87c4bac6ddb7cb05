"""The chain page, round 2: seq-ordered raw column, events table, downloads, view history and summarizer calls."""
from __future__ import annotations

import re

import pytest
from django.test import Client

from flows.models import ChainView, LLMCall, ProviderConfig, SummaryEvent
from flows.pages.selectors import EVENTS_SHOWN
from summarizer import import_chain
from tests.app_fixtures import call

pytestmark = pytest.mark.django_db


@pytest.fixture
def qa_chain(make_chain):
    """Two user questions with tool work between them; the view merged both questions into the first section."""
    chain = make_chain([
        {"role": "system", "content": "You are a pentester."},
        {"role": "user", "content": "scan 10.10.5.23"},
        {"role": "assistant", "content": None, "tool_calls": [call("call_aaaaaaaaaaaaaaaaaaaaaaaa", "nmap")]},
        {"role": "tool", "tool_call_id": "call_aaaaaaaaaaaaaaaaaaaaaaaa", "content": "22/tcp open"},
        {"role": "assistant", "content": "ssh is open"},
        {"role": "user", "content": "now try the web port"},
        {"role": "assistant", "content": "port 80 is closed"},
    ])
    ChainView.objects.create(chain=chain, version=1, messages=[
        {"role": "system", "content": "You are a pentester."},
        {"role": "user", "content": "scan 10.10.5.23\n\nnow try the web port"},
        {"role": "assistant", "content": "ssh is open"},
        {"role": "assistant", "content": "port 80 is closed"},
    ], lineage=[[1], [2, 6], [3, 4, 5], [7]], raw_seq_to=7, byte_size=200, token_count=60)
    return chain


def _raw_seqs(body: str) -> list[int]:
    return [int(s) for s in re.findall(r'<li class="msg[^"]*" id="m-(\d+)"', body)]


def test_the_raw_column_reads_in_seq_order_whatever_the_view_merged(client_for, qa_chain):
    body = client_for.get(f"/chains/{qa_chain.pk}/").content.decode()
    assert _raw_seqs(body) == [1, 2, 3, 4, 5, 6, 7]


def test_each_view_item_sits_beside_the_first_raw_message_it_covers(client_for, qa_chain):
    body = client_for.get(f"/chains/{qa_chain.pk}/").content.decode()
    bands = re.findall(r'<div class="band band-.*?(?=<div class="band band-|<div class="section-divider"|$)', body,
                       flags=re.S)
    firsts = {}
    for band in bands:
        raws = _raw_seqs(band)
        for index in re.findall(r'<article class="vmsg[^"]*" id="v-(\d+)"', band):
            firsts[int(index)] = raws[0]
    assert firsts == {0: 1, 1: 2, 2: 3, 3: 7}


def test_no_pending_band_is_shown_when_the_view_covers_everything(client_for, qa_chain):
    body = client_for.get(f"/chains/{qa_chain.pk}/").content.decode()
    band = re.search(r'<div class="band band-pending"[^>]*>', body)
    assert band is not None and "hidden" in band.group(0)


@pytest.mark.parametrize("fmt", ["openai", "pentagi", "openclaw"])
def test_the_chain_downloads_in_each_format_and_imports_back(client_for, qa_chain, fmt):
    response = client_for.get(f"/chains/{qa_chain.pk}/download/{fmt}/")
    assert response.status_code == 200 and "attachment" in response["Content-Disposition"]
    raw = [m.to_dict() for m in qa_chain.messages.order_by("seq")]
    assert import_chain(response.content.decode(), fmt) == raw


def test_downloads_refuse_unknown_formats_and_other_users(client_for, qa_chain, other_user):
    assert client_for.get(f"/chains/{qa_chain.pk}/download/xml/").status_code == 400
    stranger = Client()
    stranger.force_login(other_user)
    assert stranger.get(f"/chains/{qa_chain.pk}/download/openai/").status_code == 404


def test_the_event_page_shows_the_summarizer_calls_latency_and_output(client_for, qa_chain, other_user):
    event = SummaryEvent.objects.create(chain=qa_chain, trigger="turn", outcome="ok", summary_text="<b>found ssh</b>",
                                        covered=[[3, 5]], duration_ms=1200, settings_snapshot={"last_sec_bytes": 1})
    LLMCall.objects.create(event=event, model="gpt-4o-mini", prompt_bytes=2048, prompt_tokens=500,
                           completion_tokens=60, cost_usd=0.0123, duration_ms=987)
    body = client_for.get(f"/chains/{qa_chain.pk}/events/{event.pk}/").content.decode()
    assert "gpt-4o-mini" in body and "987 ms" in body and "$0.0123" in body and "500 → 60" in body
    assert "&lt;b&gt;found ssh&lt;/b&gt;" in body and "last_sec_bytes" in body and "#m-3" in body
    stranger = Client()
    stranger.force_login(other_user)
    assert stranger.get(f"/chains/{qa_chain.pk}/events/{event.pk}/").status_code == 404
    assert client_for.get(f"/chains/{qa_chain.pk}/events/{event.pk + 100}/").status_code == 404


def test_the_events_table_counts_costs_and_names_what_happened(client_for, qa_chain):
    SummaryEvent.objects.create(chain=qa_chain, trigger="turn", outcome="running")
    SummaryEvent.objects.create(chain=qa_chain, trigger="turn", outcome="ok", bytes_before=100, bytes_after=300)
    paid = SummaryEvent.objects.create(chain=qa_chain, trigger="manual", outcome="ok", bytes_before=900,
                                       bytes_after=300)
    LLMCall.objects.create(event=paid, cost_usd=0.5)
    events = client_for.get(f"/chains/{qa_chain.pk}/").content.decode()
    events = events[events.index('id="events-h"'):]
    assert "running…" in events and "<td>0 B → " not in events
    assert "view grew" in events and "$0.5000" in events
    assert "Showing the newest" not in events


def test_more_events_than_shown_are_counted_and_all_can_be_listed(client_for, qa_chain):
    SummaryEvent.objects.bulk_create([SummaryEvent(chain=qa_chain, trigger="turn", outcome="ok")
                                      for _ in range(EVENTS_SHOWN + 5)])
    body = client_for.get(f"/chains/{qa_chain.pk}/").content.decode()
    assert f"Showing the newest {EVENTS_SHOWN} of {EVENTS_SHOWN + 5} events" in body
    everything = client_for.get(f"/chains/{qa_chain.pk}/?events=all").content.decode()
    assert everything.count('data-event-id="') == EVENTS_SHOWN + 5 and "Showing the newest" not in everything


def test_view_history_diffs_a_version_against_the_one_before(client_for, qa_chain):
    old = qa_chain.views.get(version=1)
    ChainView.objects.create(chain=qa_chain, version=2, messages=[
        old.messages[0], old.messages[1], {"role": "assistant", "content": "**summarized content:**\nssh open"},
        old.messages[3]], lineage=[[1], [2, 6], [3, 4, 5], [7]], raw_seq_to=7, byte_size=150, token_count=40)
    body = client_for.get(f"/chains/{qa_chain.pk}/views/").content.decode()
    assert "v2" in body and "+1" in body and "−1" in body and "3 kept" in body and "-50 B, -20 tokens" in body
    assert body.count("diff-added") == 1 and body.count("diff-removed") == 1
    first = client_for.get(f"/chains/{qa_chain.pk}/views/?v=1").content.decode()
    assert "the first version" in first and first.count("diff-added") == 4
    assert client_for.get(f"/chains/{qa_chain.pk}/views/?v=9").status_code == 404


def test_compact_now_answers_json_to_the_page_script(client_for, qa_chain):
    response = client_for.post(f"/chains/{qa_chain.pk}/compact/", {"instructions": "keep creds"},
                               HTTP_ACCEPT="application/json")
    assert response.status_code == 202
    event_id = response.json()["event_id"]
    assert f"#{event_id}" in response.json()["message"]
    assert SummaryEvent.objects.get(pk=event_id).instructions == "keep creds"
    too_long = client_for.post(f"/chains/{qa_chain.pk}/compact/", {"instructions": "x" * 5000},
                               HTTP_ACCEPT="application/json")
    assert too_long.status_code == 400 and "error" in too_long.json()
    assert SummaryEvent.objects.count() == 1


def test_seq_numbers_are_permalinks_to_their_page(client_for, qa_chain):
    body = client_for.get(f"/chains/{qa_chain.pk}/").content.decode()
    assert f'href="/chains/{qa_chain.pk}/?page=1#m-4"' in body


def test_charts_carry_tooltips_seq_ticks_and_explain_the_token_limit(client_for, qa_chain):
    SummaryEvent.objects.create(chain=qa_chain, trigger="turn", outcome="ok", bytes_before=900, bytes_after=200,
                                tokens_before=250, tokens_after=60, raw_seq_to=7)
    body = client_for.get(f"/chains/{qa_chain.pk}/").content.decode()
    assert "<title>model view at seq 7: 200 B</title>" in body and "<title>raw chain at seq 1:" in body
    ticks = re.findall(r'<text class="tick"[^>]*>([^<]*)</text>', body)
    assert "seq 1" in ticks and "7" in ticks and len([t for t in ticks if t.isdigit()]) >= 3
    assert "window is unknown, so no limit is drawn" in body


def test_a_model_call_keeps_its_prompt_and_answer_capped_masked_and_nul_free(qa_chain):
    from flows.pipeline.llm.client import Completion
    from flows.pipeline.llm.recording import PROMPT_TEXT_MAX_CHARS, record_call

    provider = ProviderConfig.objects.create(name="lab", base_url="http://127.0.0.1:9/v1", api_key="sk-secret-123456")
    event = SummaryEvent.objects.create(chain=qa_chain, trigger="turn", outcome="ok")
    messages = [{"role": "system", "content": "Summarize. key sk-secret-123456"},
                {"role": "user", "content": "x\x00" + "y" * (PROMPT_TEXT_MAX_CHARS + 10)}]
    call = record_call(provider=provider, model="m", messages=messages, event=event, duration_ms=5,
                       completion=Completion(text="ssh open on 22", prompt_tokens=10, completion_tokens=4, attempts=1))
    call.refresh_from_db()
    assert call.prompt_text.startswith("system:\nSummarize.") and "sk-secret-123456" not in call.prompt_text
    assert "\x00" not in call.prompt_text and "more characters not stored" in call.prompt_text
    assert len(call.prompt_text) < PROMPT_TEXT_MAX_CHARS + 100 and call.response_text == "ssh open on 22"


def test_the_event_page_shows_each_calls_prompt_and_answer_escaped(client_for, qa_chain):
    event = SummaryEvent.objects.create(chain=qa_chain, trigger="turn", outcome="ok")
    LLMCall.objects.create(event=event, prompt_text="user:\n<script>x</script>", response_text="<i>done</i>")
    body = client_for.get(f"/chains/{qa_chain.pk}/events/{event.pk}/").content.decode()
    assert "user:\n&lt;script&gt;x&lt;/script&gt;" in body and "&lt;i&gt;done&lt;/i&gt;" in body
    assert "<script>x" not in body


def test_the_event_page_says_when_a_call_or_event_stored_no_texts(client_for, qa_chain):
    event = SummaryEvent.objects.create(chain=qa_chain, trigger="turn", outcome="ok")  # no settings snapshot
    LLMCall.objects.create(event=event, model="old-call", prompt_bytes=2048)  # before calls kept their texts
    LLMCall.objects.create(event=event, model="failed-call", prompt_text="user:\nhi", ok=False, error="timeout")
    body = client_for.get(f"/chains/{qa_chain.pk}/events/{event.pk}/").content.decode()
    assert body.count("Prompt and answer not stored") == 1 and "No answer stored: the call failed." in body
    assert "No settings were recorded with this event." in body and "<pre class=\"msg-body\">{}</pre>" not in body


def test_between_two_versions_the_charted_view_grows_with_the_raw_chain():
    from flows.pages.charts import bytes_chart

    prefix = [0, 100, 200, 300, 400, 500, 600]
    history = {"views": [{"raw_seq_to": 2, "byte_size": 50}, {"raw_seq_to": 6, "byte_size": 120}],
               "events": [{"raw_seq_to": 6, "bytes_before": 450}]}
    chart = bytes_chart(history=history, prefix=prefix)
    titles = [m["title"] for m in chart.series[1]["marks"]]
    assert titles == ["model view at seq 1: 100 B", "model view at seq 2: 50 B", "model view at seq 3: 150 B",
                      "model view at seq 4: 250 B", "model view at seq 5: 350 B", "model view at seq 6: 450 B",
                      "model view at seq 6: 120 B"]


def test_two_versions_at_one_seq_end_the_line_and_the_legend_at_the_newest_version():
    """A compaction right after a summarization (same raw seq): the line drops to the newest version's size and the
    legend says that size, the one the stat card shows; before, the larger (older) size came last."""
    from flows.pages.charts import bytes_chart, tokens_chart

    prefix = [0, 100, 200, 300, 400]
    history = {"views": [{"version": 1, "raw_seq_to": 4, "byte_size": 300, "token_count": 90},
                         {"version": 2, "raw_seq_to": 4, "byte_size": 120, "token_count": 30}],
               "events": [{"raw_seq_to": 4, "bytes_before": 400, "tokens_before": 110, "view__version": 1},
                          {"raw_seq_to": 4, "bytes_before": 300, "tokens_before": 90, "view__version": 2}]}
    by_bytes = bytes_chart(history=history, prefix=prefix).series[1]
    assert [m["title"] for m in by_bytes["marks"]][-4:] == [
        "model view at seq 4: 400 B", "model view at seq 4: 300 B", "model view at seq 4: 300 B",
        "model view at seq 4: 120 B"]
    assert by_bytes["last"] == 120
    assert tokens_chart(history=history, last_seq=4, window=None, reserve=0).series[0]["last"] == 30


@pytest.mark.parametrize("messages", [[], [{"role": "system", "content": "You are a pentester."}]])
def test_a_new_chain_with_no_or_one_message_renders(client_for, make_chain, messages):
    chain = make_chain(messages)
    assert client_for.get(f"/chains/{chain.pk}/").status_code == 200
    assert client_for.get(f"/chains/{chain.pk}/views/").status_code == 200
