"""Importing transcripts: through the API (JSON body or file upload) and the service; broken files write nothing."""
from __future__ import annotations

import json
from unittest import mock

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test.client import MULTIPART_CONTENT

from flows.ingest import chain_append, chain_import
from flows.models import Agent, Chain, ChainView, Flow, Message
from summarizer import FormatError, export_chain, import_chain
from summarizer.formats.convert import TRANSCRIPT_FORMATS
from tests.conftest import corpus_params, load_corpus
from tests.summarizer.test_formats_anthropic import REQUEST as ANTHROPIC_REQUEST
from tests.summarizer.test_formats_responses import REQUEST as RESPONSES_REQUEST

pytestmark = pytest.mark.django_db


def row_counts() -> tuple[int, ...]:
    return tuple(m.objects.count() for m in (Flow, Agent, Chain, Message))


@pytest.mark.parametrize("path", corpus_params())
def test_every_corpus_file_imports_through_the_api_and_exports_back_equal(api_client, path):
    original = load_corpus(path)
    upload = SimpleUploadedFile(path.name, path.read_bytes(), content_type="application/json")
    resp = api_client.post("/api/import", {"file": upload}, content_type=MULTIPART_CONTENT)
    assert resp.status_code == 201, resp.content[:300]
    body = resp.json()
    assert body["messages"] == len(original)
    for fmt in TRANSCRIPT_FORMATS:
        exported = api_client.get(f"/api/flows/{body['flow_id']}/export?format={fmt}")
        assert import_chain(exported.content, fmt) == original, fmt


def test_the_corpus_model_becomes_the_flows_model(user):
    path = next(iter(p.values[0] for p in corpus_params() if p.values[0] is not None), None)
    if path is None:
        pytest.skip("shared corpus not found")
    data = json.loads(path.read_text())
    chain = chain_import(owner=user, data=data)
    assert chain.agent.flow.model_name == (data["model"] or "")


@pytest.mark.parametrize("fmt, request_", [("anthropic", ANTHROPIC_REQUEST), ("responses", RESPONSES_REQUEST)])
def test_a_wire_request_imports_through_the_api_and_exports_back_exactly(api_client, fmt, request_):
    resp = api_client.post("/api/import", {"data": request_})  # detected
    assert resp.status_code == 201, resp.content[:300]
    exported = api_client.get(f"/api/flows/{resp.json()['flow_id']}/export?format={fmt}")
    assert json.loads(exported.content) == request_


@pytest.mark.parametrize("fmt", TRANSCRIPT_FORMATS)
def test_a_json_body_import_works_in_each_format(api_client, tool_round, fmt):
    data = export_chain(tool_round, fmt)
    resp = api_client.post("/api/import", {"format": fmt, "data": data, "title": "t"})
    assert resp.status_code == 201
    chain = Chain.objects.get(pk=resp.json()["chain_id"])
    assert chain.raw_messages() == tool_round
    assert chain.agent.flow.title == "t" and chain.tool_call_id_template == "call_{r:24:x}"


def test_the_format_is_detected_when_not_given(api_client, tool_round):
    resp = api_client.post("/api/import", {"data": export_chain(tool_round, "openclaw")})
    assert resp.status_code == 201


BROKEN = [
    ("openai", '[{"role": "user", "content": "q"},'),
    ("openclaw", '{"type":"message","message":{"role":"user","content":"q"}}\n{oops}\n'),
    ("pentagi", [{"role": "human", "text": "q"}, {"role": "ai", "parts": [{"type": "hologram"}]}]),
    ("openai", [{"role": "user", "content": "q"}, {"role": "tool", "tool_call_id": "call_1", "content": "x"}]),
    ("openai", [{"role": "user", "content": "q"}, {"role": "robot", "content": "x"}]),
    ("openai", []),
]


@pytest.mark.parametrize("fmt, data", BROKEN)
def test_a_broken_file_is_a_clear_400_and_writes_nothing(api_client, fmt, data):
    before = row_counts()
    resp = api_client.post("/api/import", {"format": fmt, "data": data})
    assert resp.status_code == 400
    body = resp.json()
    assert body["error"] in ("invalid_format", "invalid_message", "orphan_tool_result") and body["detail"]
    assert row_counts() == before


def test_a_broken_upload_names_the_line(api_client):
    upload = SimpleUploadedFile("s.jsonl", b'{"type":"session"}\n{"type":"message","message":{}}\nnot json\n')
    resp = api_client.post("/api/import", {"file": upload}, content_type=MULTIPART_CONTENT)
    assert resp.status_code == 400 and resp.json()["line"] == 3


@pytest.mark.parametrize("body", [{"format": "yaml", "data": []}, {"nodata": 1}, {"data": [], "agent_type": "x"}])
def test_bad_import_options_are_a_400(api_client, body):
    assert api_client.post("/api/import", body).status_code == 400


def test_a_multipart_request_without_a_file_is_a_400(api_client):
    resp = api_client.post("/api/import", {"format": "openai"}, content_type=MULTIPART_CONTENT)
    assert resp.status_code == 400


def test_the_service_rolls_back_everything_on_a_bad_message(user):
    before = row_counts()
    with pytest.raises(FormatError):
        chain_import(owner=user, data="", fmt=None)
    with pytest.raises(ValueError):
        chain_import(owner=user, data=[{"role": "user", "content": "q"}, {"role": "assistant", "content": 3}])
    assert row_counts() == before


def test_a_multipart_body_without_a_boundary_is_a_400_not_a_500(api_client):
    resp = api_client.post("/api/import", "x", content_type="multipart/form-data")
    assert resp.status_code == 400 and resp.json()["error"] == "malformed_multipart"


def test_an_imported_chain_knows_the_tokens_of_its_messages_and_appends_add_to_them(user, tool_round):
    chain = chain_import(owner=user, data={"messages": tool_round}, fmt="openai")
    counts = list(Message.objects.filter(chain=chain).values_list("token_count", flat=True))
    assert chain.raw_tokens == Chain.objects.get(pk=chain.pk).raw_tokens == sum(counts) > 0
    chain_append(chain=chain, messages=[{"role": "user", "content": "and now the web server"}])
    assert Chain.objects.get(pk=chain.pk).raw_tokens == sum(
        Message.objects.filter(chain=chain).values_list("token_count", flat=True))


@pytest.mark.parametrize("last", ["user", "assistant"])
def test_an_import_queues_its_summarization_whatever_its_last_message(
        user, tool_round, last, django_capture_on_commit_callbacks):
    messages = tool_round + ([{"role": "user", "content": "provide a summary of what you found"}]
                             if last == "user" else [])
    assert messages[-1]["role"] == last
    with mock.patch("flows.pipeline.tasks.summarize_chain_task.delay") as queued:
        with django_capture_on_commit_callbacks(execute=True):
            chain = chain_import(owner=user, data={"messages": messages}, fmt="openai")
    queued.assert_called_once_with(chain.pk)


def test_an_import_ending_on_a_user_message_gets_a_view(user, tool_round, django_capture_on_commit_callbacks):
    from celery import current_app

    messages = tool_round + [{"role": "user", "content": "provide a summary of what you found"}]
    eager, current_app.conf.task_always_eager = current_app.conf.task_always_eager, True
    try:
        with django_capture_on_commit_callbacks(execute=True):
            chain = chain_import(owner=user, data={"messages": messages}, fmt="openai")
    finally:
        current_app.conf.task_always_eager = eager
    view = ChainView.objects.filter(chain=chain).order_by("-version").first()
    assert view is not None and view.messages[-1]["content"] == messages[-1]["content"]
