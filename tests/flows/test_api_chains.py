"""/api/chains/{id}: append batches, read raw/view/sections/stats, catch up by seq, events, compact, preview."""
from __future__ import annotations

import json
from unittest import mock

import pytest
from django.test import override_settings

from flows.ingest import MAX_BATCH_MESSAGES
from flows.models import ChainView, Message, SummaryEvent
from tests.app_fixtures import call

pytestmark = pytest.mark.django_db


def post_messages(client, chain, messages, **extra):
    return client.post(f"/api/chains/{chain.pk}/messages", {"messages": messages}, **extra)


def test_appending_a_batch_stores_it_with_contiguous_seqs(api_client, make_chain, tool_round):
    chain = make_chain()
    resp = post_messages(api_client, chain, tool_round[:3])
    assert resp.status_code == 201
    assert resp.json() == {"appended": 3, "last_seq": 3, "turn_completed": False, "summarization": "none"}
    resp = post_messages(api_client, chain, tool_round[3:])
    # the test's own transaction never commits, so the summarization is not queued yet (tests/reliability:
    # "queued", or "not queued: broker unreachable", on a real server)
    assert resp.json() == {"appended": 2, "last_seq": 5, "turn_completed": True, "summarization": "pending"}
    rows = list(chain.messages.order_by("seq"))
    assert [r.seq for r in rows] == [1, 2, 3, 4, 5]
    assert [r.to_dict() for r in rows] == tool_round


def test_the_chain_read_has_raw_view_sections_and_stats(api_client, make_chain, tool_round):
    chain = make_chain(messages=tool_round)
    body = api_client.get(f"/api/chains/{chain.pk}").json()
    assert {"id", "raw", "view", "sections", "stats"} <= set(body)
    assert [m["seq"] for m in body["raw"]] == [1, 2, 3, 4, 5]
    assert body["view"] == tool_round  # no view yet: the model receives the raw chain
    assert [p["kind"] for p in body["sections"][0]["pairs"]] == ["request_response", "completion"]
    stats = body["stats"]
    assert stats["last_seq"] == 5 and stats["view_version"] == 0 and stats["compactions"] == 0
    assert stats["raw_bytes"] == sum(m["byte_size"] for m in body["raw"]) == stats["view_bytes"]
    assert stats["raw_tokens"] > 0


def test_the_chain_read_shows_the_newest_view_when_there_is_one(api_client, make_chain, tool_round):
    chain = make_chain(messages=tool_round)
    summary = [tool_round[0], tool_round[1], {"role": "assistant", "content": "**summarized content:**\nport 22"}]
    ChainView.objects.create(chain=chain, version=1, messages=tool_round, raw_seq_to=5)
    ChainView.objects.create(chain=chain, version=2, messages=summary, raw_seq_to=5, byte_size=10, token_count=7)
    body = api_client.get(f"/api/chains/{chain.pk}").json()
    assert body["view"] == summary
    assert body["sections"][0]["pairs"][0]["summary"] is True
    assert (body["stats"]["view_bytes"], body["stats"]["view_tokens"]) == (10, 7)


def test_catch_up_returns_messages_after_a_seq_in_pages(api_client, make_chain, tool_round):
    chain = make_chain(messages=tool_round)
    body = api_client.get(f"/api/chains/{chain.pk}/messages?after_seq=2&limit=2").json()
    assert [m["seq"] for m in body["messages"]] == [3, 4]
    assert body["has_more"] is True and body["last_seq"] == 5
    assert api_client.get(f"/api/chains/{chain.pk}/messages?after_seq=x").status_code == 400
    assert api_client.get(f"/api/chains/{chain.pk}/messages?limit=0").status_code == 400


def test_events_lists_the_chains_summary_events(api_client, make_chain, tool_round):
    chain = make_chain(messages=tool_round)
    SummaryEvent.objects.create(chain=chain, trigger="turn", outcome="ok", bytes_before=100, bytes_after=40)
    events = api_client.get(f"/api/chains/{chain.pk}/events").json()["events"]
    assert [(e["trigger"], e["bytes_before"], e["bytes_after"]) for e in events] == [("turn", 100, 40)]


@pytest.mark.parametrize("messages, index, code", [
    ([{"role": "wizard", "content": "x"}], 0, "invalid_message"),
    ([{"role": "user", "content": "q"}, {"role": "user", "content": 5}], 1, "invalid_message"),
    ([{"role": "user", "content": "q"}, {"role": "tool", "tool_call_id": "call_x", "content": "r"}], 1,
     "orphan_tool_result"),
    ([{"role": "assistant", "content": "hi"}], 0, "invalid_order"),
    ([{"role": "user", "content": "q"}, {"role": "system", "content": "late"}], 1, "invalid_order"),
    ([{"role": "user", "content": "q"}, {"role": "assistant", "content": None, "tool_calls": [call("call_1")]},
      {"role": "tool", "tool_call_id": "call_1", "content": "a"},
      {"role": "tool", "tool_call_id": "call_1", "content": "again"}], 3, "orphan_tool_result"),
])
def test_a_bad_batch_is_rejected_whole_naming_the_message(api_client, make_chain, messages, index, code):
    chain = make_chain()
    resp = post_messages(api_client, chain, messages)
    assert resp.status_code == 400
    body = resp.json()
    assert (body["error"], body["index"]) == (code, index)
    assert f"message {index}" in body["detail"]
    assert not Message.objects.exists()


def test_a_tool_result_after_a_user_message_is_an_orphan_but_a_pending_call_is_fine(api_client, make_chain):
    chain = make_chain(messages=[{"role": "user", "content": "q"},
                                 {"role": "assistant", "content": None, "tool_calls": [call("call_1")]}])
    assert post_messages(api_client, chain, [{"role": "user", "content": "stop, do this"}]).status_code == 201
    resp = post_messages(api_client, chain, [{"role": "tool", "tool_call_id": "call_1", "content": "late"}])
    assert resp.status_code == 400 and resp.json()["error"] == "orphan_tool_result"
    assert chain.messages.count() == 3


@pytest.mark.parametrize("body, ctype, status, code", [
    ("{not json", "application/json", 400, "malformed_json"),
    ('{"messages": []}', "application/json", 400, "invalid_batch"),
    ('{"messages": {"role": "user"}}', "application/json", 400, "invalid_batch"),
    ('{"msgs": []}', "application/json", 400, "invalid_body"),
    ("[1, 2]", "application/json", 400, "invalid_body"),
    ("role=user", "application/x-www-form-urlencoded", 415, "unsupported_media_type"),
])
def test_malformed_bodies_get_a_json_4xx(api_client, make_chain, body, ctype, status, code):
    chain = make_chain()
    resp = api_client.post(f"/api/chains/{chain.pk}/messages", body, content_type=ctype)
    assert resp.status_code == status and resp["Content-Type"] == "application/json"
    assert resp.json()["error"] == code


def test_a_huge_message_is_a_413(api_client, make_chain):
    chain = make_chain()
    with mock.patch("flows.ingest.append.MAX_MESSAGE_BYTES", 1000):
        resp = post_messages(api_client, chain, [{"role": "user", "content": "x" * 2000}])
    assert resp.status_code == 413 and resp.json()["error"] == "message_too_large"
    assert not Message.objects.exists()


def test_too_many_messages_in_one_batch_is_a_413(api_client, make_chain):
    chain = make_chain()
    batch = [{"role": "user", "content": "q"}] * (MAX_BATCH_MESSAGES + 1)
    resp = post_messages(api_client, chain, batch)
    assert resp.status_code == 413 and resp.json()["error"] == "batch_too_large"


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=2000)
def test_a_body_over_the_request_limit_is_a_413(api_client, make_chain):
    chain = make_chain()
    resp = post_messages(api_client, chain, [{"role": "user", "content": "x" * 5000}])
    assert resp.status_code == 413 and resp.json()["error"] == "payload_too_large"


def test_another_users_chain_is_a_404_for_every_endpoint(api_client, make_chain, other_user, tool_round):
    theirs = make_chain(messages=tool_round, owner=other_user)
    for path in ("", "/messages", "/events"):
        assert api_client.get(f"/api/chains/{theirs.pk}{path}").status_code == 404
    assert post_messages(api_client, theirs, tool_round).status_code == 404
    assert api_client.post(f"/api/chains/{theirs.pk}/compact", {}).status_code == 404
    assert api_client.post(f"/api/chains/{theirs.pk}/preview", {"settings": {}}).status_code == 404
    assert theirs.messages.count() == 5


def test_unknown_chain_ids_are_a_404(api_client):
    assert api_client.get("/api/chains/999999").json()["error"] == "not_found"
    assert api_client.get("/api/chains/99999999999999999999999").status_code == 404


def test_a_committed_batch_broadcasts_and_a_completed_turn_queues_summarization(
        api_client, make_chain, tool_round, django_capture_on_commit_callbacks):
    chain = make_chain()
    with mock.patch("flows.ingest.append.broadcast") as sent, \
            mock.patch("flows.pipeline.tasks.summarize_chain_task.delay") as queued:
        with django_capture_on_commit_callbacks(execute=True):
            post_messages(api_client, chain, tool_round[:3])
        queued.assert_not_called()  # calls are pending: the turn is not over
        with django_capture_on_commit_callbacks(execute=True):
            post_messages(api_client, chain, tool_round[3:])
    queued.assert_called_once_with(chain.pk)
    event = sent.call_args_list[-1].args[1]
    assert event["type"] == "message.appended" and event["last_seq"] == 5
    assert [m["seq"] for m in event["messages"]] == [4, 5]


def test_compact_validates_instructions_and_asks_the_pipeline(api_client, make_chain, tool_round):
    chain = make_chain(messages=tool_round)
    event = SummaryEvent.objects.create(chain=chain, trigger="manual", instructions="Focus on ports")
    with mock.patch("flows.api.views_chains.chain_request_compaction", return_value=event) as request:
        resp = api_client.post(f"/api/chains/{chain.pk}/compact", {"instructions": " Focus on ports "})
        too_long = api_client.post(f"/api/chains/{chain.pk}/compact", {"instructions": "x" * 801})
        wrong_type = api_client.post(f"/api/chains/{chain.pk}/compact", {"instructions": ["x"]})
    assert resp.status_code == 201 and resp.json()["id"] == event.pk
    assert request.call_args.kwargs["instructions"] == "Focus on ports"
    assert (too_long.status_code, wrong_type.status_code) == (400, 400)
    assert request.call_count == 1


def test_preview_validates_settings_and_passes_the_merged_values(api_client, make_chain, tool_round):
    chain = make_chain(messages=tool_round)
    with mock.patch("flows.api.views_chains.chain_preview", return_value={"view": [], "stats": {}}) as preview:
        resp = api_client.post(f"/api/chains/{chain.pk}/preview", {"settings": {"last_sec_bytes": 20000}})
        bad = api_client.post(f"/api/chains/{chain.pk}/preview", {"settings": {"keep_qa_sections": 50}})
    assert resp.status_code == 200 and resp.json() == {"view": [], "stats": {}}
    passed = preview.call_args.kwargs["settings"]
    assert passed["last_sec_bytes"] == 20000 and passed["max_qa_sections"] == 10
    assert bad.status_code == 400 and "keep_qa_sections" in bad.json()["detail"]
    assert preview.call_count == 1


def test_a_message_event_payload_stays_bounded_for_huge_batches(make_chain):
    from flows.ingest.append import EVENT_MESSAGES_MAX_BYTES, _event_messages

    chain = make_chain(messages=[{"role": "user", "content": "x" * 300_000},
                                 {"role": "assistant", "content": "y" * 300_000}])
    sent = _event_messages(list(chain.messages.order_by("seq")))
    assert [m["seq"] for m in sent] == [1]
    assert len(json.dumps(sent)) <= EVENT_MESSAGES_MAX_BYTES


@pytest.mark.parametrize("spare", [-3, 0, 1, 3, 4, 10])
def test_a_message_event_carries_every_message_whose_encoding_fits_the_cap(spare):
    """Two messages whose encodings add up to the cap minus `spare` characters: both go when they fit one by one
    (the list's own brackets and comma do not count), the first alone when they do not."""
    from flows.ingest.append import EVENT_MESSAGES_MAX_BYTES, _event_messages
    from flows.models import Message

    def row(seq: int, chars: int) -> Message:
        return Message(seq=seq, role="user", content="x" * chars, byte_size=0, token_count=1)

    empty = len(json.dumps(_event_messages([row(1, 0)])[0], ensure_ascii=False))
    half = (EVENT_MESSAGES_MAX_BYTES - spare) // 2 - empty
    rows = [row(1, half), row(2, EVENT_MESSAGES_MAX_BYTES - spare - 2 * empty - half)]
    sent = _event_messages(rows)
    assert [m["seq"] for m in sent] == ([1, 2] if spare >= 0 else [1])


def test_the_chain_read_pages_raw_messages_with_a_cursor(api_client, make_chain, tool_round):
    chain = make_chain(messages=tool_round)
    first = api_client.get(f"/api/chains/{chain.pk}?limit=2").json()
    assert [m["seq"] for m in first["raw"]] == [1, 2]
    assert (first["has_more"], first["next_after_seq"]) == (True, 2)
    assert first["view"] == tool_round[:2] and first["stats"]["raw_messages"] == 5
    assert (first["view_has_more"], first["next_view_offset"]) == (True, 2)
    second = api_client.get(f"/api/chains/{chain.pk}?after_seq={first['next_after_seq']}&limit=2").json()
    assert [m["seq"] for m in second["raw"]] == [3, 4] and "view" not in second
    last = api_client.get(f"/api/chains/{chain.pk}?after_seq=4&limit=2").json()
    assert [m["seq"] for m in last["raw"]] == [5] and (last["has_more"], last["next_after_seq"]) == (False, None)
    for bad in ("limit=0", "limit=1001", "after_seq=-1", "after_seq=x", "limit=2.5"):
        assert api_client.get(f"/api/chains/{chain.pk}?{bad}").status_code == 400, bad


def test_the_view_is_read_in_pages_of_limit_messages_and_sections_come_with_the_first(api_client, make_chain,
                                                                                      tool_round):
    chain = make_chain(messages=tool_round)
    pages, offset = [], 0
    while offset is not None:
        body = api_client.get(f"/api/chains/{chain.pk}?after_seq=5&view_offset={offset}&limit=2").json()
        assert body["raw"] == [] and body["view_offset"] == offset and body["stats"]["view_messages"] == 5
        assert ("sections" in body) is (offset == 0)
        pages.append(body["view"])
        offset = body["next_view_offset"]
    assert pages == [tool_round[:2], tool_round[2:4], tool_round[4:]]
    assert api_client.get(f"/api/chains/{chain.pk}?view_offset=-1").status_code == 400


def test_the_first_page_of_a_20000_message_import_never_summarized_stays_small(api_client, make_chain):
    """Found: 3.7 MB, the whole raw chain as its own view; now `limit` view messages like the raw page."""
    chain = make_chain()
    Message.objects.bulk_create([Message(chain=chain, seq=seq, role="user", content=f"note {seq} " + "x" * 170,
                                         byte_size=180, token_count=40) for seq in range(1, 20_001)], batch_size=5000)
    type(chain).objects.filter(pk=chain.pk).update(last_seq=20_000)
    response = api_client.get(f"/api/chains/{chain.pk}")
    body = response.json()
    assert len(body["raw"]) == len(body["view"]) == 500 and body["stats"]["view_messages"] == 20_000
    assert body["next_view_offset"] == 500
    assert len(response.content) < 400_000, len(response.content)


def _bulk_user_messages(chain, count: int) -> None:
    """A long run of consecutive user messages (the shape that made the read quadratic), written fast."""
    Message.objects.bulk_create([Message(chain=chain, seq=seq, role="user", content=f"note {seq}", byte_size=9,
                                         token_count=3) for seq in range(1, count + 1)], batch_size=5000)
    type(chain).objects.filter(pk=chain.pk).update(last_seq=count)


@pytest.mark.slow  # about a minute on SQLite, most of it writing the 100,000 rows
def test_a_100000_message_chain_is_read_in_bounded_pages(api_client, make_chain):
    chain = make_chain()
    _bulk_user_messages(chain, 100_000)
    body = api_client.get(f"/api/chains/{chain.pk}").json()
    assert len(body["raw"]) == 500 and body["stats"]["raw_messages"] == 100_000
    assert body["sections"][0]["header"]["human_bytes"] > 0  # the whole run parsed as one merged user message
    seen, after = len(body["raw"]), body["next_after_seq"]
    while after is not None:
        page = api_client.get(f"/api/chains/{chain.pk}?after_seq={after}&limit=1000").json()
        assert page["raw"][0]["seq"] == after + 1 and len(page["raw"]) <= 1000
        seen, after = seen + len(page["raw"]), page["next_after_seq"]
    assert seen == 100_000
