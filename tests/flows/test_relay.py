"""flows.core.relay: the server publishes a per-start secret; other processes hand it events and tasks through
`/internal/relay/`; chains written while no worker ran are found for the start-up catch-up."""
from __future__ import annotations

import json
import os
import stat
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.test import Client

from flows.core import SECRET_HEADER, Relay, group_name, relay
from flows.models import ChainView
from flows.pipeline import recovery, tasks

pytestmark = pytest.mark.django_db


@pytest.fixture
def var_dir(settings, tmp_path):
    settings.VAR_DIR = tmp_path
    yield tmp_path
    relay.server_unpublish()
    relay.relay_install(None)


@pytest.fixture
def secret(var_dir) -> str:
    return relay.server_publish(host="0.0.0.0", port=8123)


def post(body: Any, secret: str | None) -> Any:
    headers = {f"HTTP_{SECRET_HEADER.upper().replace('-', '_')}": secret} if secret is not None else {}
    return Client().post("/internal/relay/", json.dumps(body), content_type="application/json", **headers)


def test_publishing_writes_a_private_file_with_a_loopback_url(var_dir, secret):
    path = var_dir / "server.json"
    data = json.loads(path.read_text())
    assert data == {"url": "http://127.0.0.1:8123", "secret": secret, "pid": os.getpid()}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert relay.server_secret() == secret


def test_each_start_gets_a_new_secret_and_unpublishing_removes_only_our_file(var_dir):
    first = relay.server_publish(host="127.0.0.1", port=1)
    assert relay.server_publish(host="127.0.0.1", port=1) != first
    relay.server_unpublish()
    assert not (var_dir / "server.json").exists() and relay.server_secret() is None
    (var_dir / "server.json").write_text(json.dumps({"url": "http://x", "secret": "s", "pid": os.getpid() + 1}))
    relay.server_unpublish()
    assert (var_dir / "server.json").exists()


def test_the_relay_is_absent_where_no_server_runs(var_dir):
    assert post({"kind": "ping"}, "anything").status_code == 404


def test_a_missing_or_wrong_secret_is_refused(secret):
    assert post({"kind": "ping"}, None).status_code == 403
    assert post({"kind": "ping"}, secret + "x").status_code == 403
    assert Client().get("/internal/relay/").status_code == 405


def test_a_ping_with_the_secret_answers(secret):
    response = post({"kind": "ping"}, secret)
    assert response.status_code == 200 and response.json() == {"ok": True}


def test_a_relayed_event_reaches_the_chains_group(secret, make_chain, tool_round):
    chain = make_chain(tool_round)
    layer = get_channel_layer()
    channel = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)(group_name(chain.pk), channel)
    event = {"type": "view.updated", "chain_id": chain.pk, "version": 3, "raw_seq_to": 4, "byte_size": 10,
             "token_count": 5, "messages": 2}
    assert post({"kind": "event", "chain_id": chain.pk, "event": event}, secret).status_code == 200
    assert async_to_sync(layer.receive)(channel) == {"type": "chain.event", "kind": "view.updated",
                                                     "text": json.dumps(event)}


@pytest.mark.parametrize("body", [
    [], "ping", {"kind": "nope"}, {"kind": "event", "chain_id": "1", "event": {}},
    {"kind": "event", "chain_id": 1, "event": {"type": "shell.exec", "chain_id": 1}},
    {"kind": "task", "task": "os.system", "args": [1]}, {"kind": "task", "task": "flows.summarize_chain"},
    {"kind": "task", "task": "flows.summarize_chain", "args": [True]},
    {"kind": "task", "task": "flows.summarize_chain", "args": [1, 2]},
    {"kind": "task", "task": "flows.compact_chain", "args": [1, "x"]},
])
def test_malformed_relay_bodies_are_a_400(secret, body, monkeypatch):
    queued: list[Any] = []
    monkeypatch.setattr(tasks.summarize_chain_task, "delay", lambda *a: queued.append(a))
    assert post(body, secret).status_code == 400
    assert queued == []


def test_an_event_for_a_missing_chain_or_with_another_chain_id_is_a_400(secret, make_chain, tool_round):
    chain = make_chain(tool_round)
    event = {"type": "message.appended", "chain_id": chain.pk, "messages": [], "last_seq": 1}
    assert post({"kind": "event", "chain_id": chain.pk + 1, "event": event}, secret).status_code == 400
    missing = {**event, "chain_id": chain.pk + 99}
    assert post({"kind": "event", "chain_id": chain.pk + 99, "event": missing}, secret).status_code == 400


def test_a_relayed_task_is_queued_on_this_servers_worker(secret, monkeypatch):
    queued: list[tuple[Any, ...]] = []
    monkeypatch.setattr(tasks.compact_chain_task, "delay", lambda *a: queued.append(a))
    assert post({"kind": "task", "task": "flows.compact_chain", "args": [7, None]}, secret).status_code == 200
    assert queued == [(7, None)]


def test_with_a_relay_installed_broadcasts_and_tasks_go_to_the_server(var_dir, monkeypatch):
    sent: list[dict[str, Any]] = []
    monkeypatch.setattr(Relay, "post", lambda self, body, timeout=0: sent.append(body) or {"ok": True})
    relay.relay_install(Relay(url="http://127.0.0.1:1", secret="s"))
    from flows.core.events import broadcast

    event = {"type": "compaction.started", "chain_id": 5, "event_id": 9, "trigger": "manual"}
    broadcast(5, event)  # type: ignore[arg-type]
    assert tasks.summarize_chain_task.delay(5) is None
    assert sent == [{"kind": "event", "chain_id": 5, "event": event},
                    {"kind": "task", "task": "flows.summarize_chain", "args": [5]}]


def test_connecting_needs_a_file_naming_a_server_that_answers(var_dir, monkeypatch):
    assert relay.relay_connect() is None  # no file
    (var_dir / "server.json").write_text("{not json")
    assert relay.relay_connect() is None
    (var_dir / "server.json").write_text(json.dumps({"url": "http://127.0.0.1:9", "secret": "s", "pid": 1}))
    assert relay.relay_connect() is None  # nothing listens on port 9 (discard): refused
    monkeypatch.setattr(Relay, "post", lambda self, body, timeout=0: {"ok": True})
    assert relay.relay_connect() == Relay(url="http://127.0.0.1:9", secret="s")


def test_chains_behind_their_view_are_the_ones_with_uncovered_raw_messages(make_chain, tool_round):
    fresh = make_chain(tool_round)
    covered = make_chain(tool_round)
    behind = make_chain(tool_round)
    empty = make_chain([])
    for chain, seen in ((covered, covered.last_seq), (behind, behind.last_seq - 1)):
        ChainView.objects.create(chain=chain, version=1, messages=[], lineage=[], raw_seq_to=seen)
        type(chain).objects.filter(pk=chain.pk).update(view_version=1)
    assert recovery.chains_behind_their_view() == [fresh.pk, behind.pk]
    assert empty.pk not in recovery.chains_behind_their_view()
