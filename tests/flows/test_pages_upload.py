"""`/flows/upload/`: a transcript uploaded in the browser becomes a flow at once, or replays live turn by turn;
bad files are a 400 that writes nothing."""
from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from flows.ingest import chain_replay, chain_replay_create
from flows.ingest import replay as replay_service
from flows.models import Chain, Flow, Message
from flows.pages import upload as upload_view

pytestmark = pytest.mark.django_db


@pytest.fixture
def form_client(client: Client, user) -> Client:
    """pytest-django's client, logged in, posting multipart forms like a browser."""
    client.force_login(user)
    return client


def transcript(tool_round: list[dict[str, Any]]) -> SimpleUploadedFile:
    return SimpleUploadedFile("session.json", json.dumps(tool_round).encode(), content_type="application/json")


def test_the_upload_page_is_a_plain_form(session_client):
    page = session_client.get("/flows/upload/")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'enctype="multipart/form-data"' in html and 'name="replay"' in html
    assert 'src="/static/js/' not in html.split("</head>", 1)[1]  # works without JavaScript: no page script


def test_an_upload_imports_the_transcript_at_once(form_client, user, tool_round):
    response = form_client.post("/flows/upload/", {"file": transcript(tool_round), "profile": "agent"})
    chain = Chain.objects.get(agent__flow__owner=user)
    assert response.status_code == 302 and response["Location"] == f"/chains/{chain.pk}/"
    assert chain.last_seq == len(tool_round) and chain.agent.flow.title == "session.json"


def test_an_upload_with_replay_creates_an_empty_chain_and_starts_the_replay(form_client, user, tool_round,
                                                                             monkeypatch):
    started: list[tuple[int, list, float]] = []
    monkeypatch.setattr(upload_view, "chain_replay_start",
                        lambda *, chain, batches, speed: started.append((chain.pk, batches, speed)))
    response = form_client.post("/flows/upload/", {"file": transcript(tool_round), "profile": "assistant",
                                                      "title": "Watch me", "replay": "on", "speed": "5"})
    chain = Chain.objects.get(agent__flow__title="Watch me")
    assert response.status_code == 302 and chain.last_seq == 0 and chain.agent.profile == "assistant"
    (pk, batches, speed), = started
    assert pk == chain.pk and speed == 5 and [m for b in batches for m in b] == tool_round


@pytest.mark.parametrize("replay", ["", "on"])
@pytest.mark.parametrize("body", [b"{not json", b"[]", json.dumps([{"role": "tool", "content": "x"}]).encode(),
                                  json.dumps([{"role": "user", "content": "q"},
                                              {"role": "tool", "tool_call_id": "c1", "content": "x"}]).encode()])
def test_a_bad_transcript_is_a_400_and_writes_nothing(form_client, body, replay):
    upload = SimpleUploadedFile("bad.json", body)
    response = form_client.post("/flows/upload/", {"file": upload, "profile": "agent", "replay": replay})
    assert response.status_code == 400 and 'role="alert"' in response.content.decode()
    assert Flow.objects.count() == 0 and Message.objects.count() == 0


@pytest.mark.parametrize("fields", [{"profile": "root"}, {"profile": "agent", "format": "yaml"},
                                    {"profile": "agent", "replay": "on", "speed": "0"},
                                    {"profile": "agent", "replay": "on", "speed": "1e9"}])
def test_bad_options_are_a_400(form_client, tool_round, fields):
    response = form_client.post("/flows/upload/", {"file": transcript(tool_round), **fields})
    assert response.status_code == 400 and Flow.objects.count() == 0


def test_anonymous_visitors_are_sent_to_login(anon_client):
    assert anon_client.get("/flows/upload/")["Location"].startswith("/accounts/login/")


def test_a_replay_appends_turn_by_turn_in_order(user, tool_round):
    chain, batches = chain_replay_create(owner=user, messages=tool_round, title="t")
    assert len(batches) > 1
    assert chain_replay(chain=chain, batches=batches, pause_seconds=0) == len(tool_round)
    stored = list(Message.objects.filter(chain=chain).order_by("seq").values_list("seq", "role"))
    assert stored == [(i + 1, m["role"]) for i, m in enumerate(tool_round)]


def test_a_stopped_replay_appends_nothing_more(user, tool_round):
    chain, batches = chain_replay_create(owner=user, messages=tool_round, title="t")
    stop = threading.Event()
    stop.set()
    assert chain_replay(chain=chain, batches=batches, pause_seconds=0, stop=stop) == 0


@pytest.mark.django_db(transaction=True)
def test_the_background_replay_writes_everything_from_its_own_thread(user, tool_round):
    chain, batches = chain_replay_create(owner=user, messages=tool_round, title="t")
    replay_service.chain_replay_start(chain=chain, batches=batches, speed=0).join(timeout=30)
    assert Chain.objects.get(pk=chain.pk).last_seq == len(tool_round)
