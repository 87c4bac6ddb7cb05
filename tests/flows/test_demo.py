"""The built-in demo agent and the replay command: realistic, valid, lab-only chains that resume cleanly."""
from __future__ import annotations

import json
import random
import re

import pytest
from django.core.management import CommandError, call_command

from flows.demo import DEMO_MODEL, DEMO_SETTINGS, demo_create, demo_run, demo_turns, turn_batches
from flows.models import Chain, Flow, Message, ModelWindow, SettingsChange, SummaryEvent
from summarizer.messages import validate_messages

IP = re.compile(r"\b(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3})\b")


def campaign(seed: int = 1) -> list[dict]:
    rng = random.Random(seed)
    return [m for kind, batch in demo_turns(rng, "10.10.5.23", first=True) if kind == "append" for m in batch]


def test_a_campaign_is_a_valid_chain_of_realistic_sizes():
    messages = campaign()
    validate_messages(messages)
    sizes = {m["tool_call_id"]: len(m["content"]) for m in messages if m["role"] == "tool"}
    assert len(sizes) >= 10 and max(sizes.values()) > 10_000 and sorted(sizes.values())[len(sizes) // 2] > 900
    assert messages[0]["role"] == "system" and any("<script>" in m["content"] for m in messages if m["role"] == "tool")


def test_the_demo_only_touches_lab_addresses():
    text = json.dumps(campaign())
    addresses = set(IP.findall(text))
    assert addresses and all(a.startswith(("10.10.5.", "127.0.", "0.0.0.0")) for a in addresses), addresses


def test_the_demo_is_reproducible_from_its_seed():
    assert campaign(7) == campaign(7) and campaign(7) != campaign(8)


def test_turn_batches_keep_tool_results_with_their_call():
    batches = turn_batches(campaign())
    assert [m["role"] for m in batches[0]] == ["system", "user"]
    for batch in batches[1:]:
        if batch[0]["role"] == "assistant" and batch[0].get("tool_calls"):
            assert {c["id"] for c in batch[0]["tool_calls"]} == {m["tool_call_id"] for m in batch[1:]}
        else:
            assert len(batch) == 1


@pytest.mark.django_db
def test_demo_run_writes_the_campaign_through_the_service_and_asks_for_a_compaction(user, monkeypatch):
    from flows import tasks

    monkeypatch.setattr(tasks.summarize_chain_task, "delay", lambda *a: None)
    monkeypatch.setattr(tasks.compact_chain_task, "delay", lambda *a: None)
    flow, chain = demo_create(owner=user)
    count = demo_run(flow=flow, chain=chain, campaigns=1, sleep=lambda s: None)
    chain.refresh_from_db()
    flow.refresh_from_db()
    assert count == chain.last_seq == len(campaign(5023)) and flow.status == "finished"
    assert flow.model_name == DEMO_MODEL and ModelWindow.objects.get(model=DEMO_MODEL).context_window == 16_384
    override = flow.settings_overrides.get(profile="agent")
    assert all(getattr(override, k) == v for k, v in DEMO_SETTINGS.items())
    assert SettingsChange.objects.filter(settings=override, source="demo").exists()
    assert SummaryEvent.objects.get(chain=chain, trigger="manual").instructions.startswith("Focus on the credentials")


@pytest.mark.django_db
def test_demo_run_stops_when_asked(user, monkeypatch):
    import threading

    from flows import tasks

    monkeypatch.setattr(tasks.summarize_chain_task, "delay", lambda *a: None)
    flow, chain = demo_create(owner=user)
    stop = threading.Event()
    stop.set()
    assert demo_run(flow=flow, chain=chain, stop=stop, sleep=lambda s: None) == 0
    assert Flow.objects.get(pk=flow.pk).status == "waiting"


@pytest.fixture
def transcript(tmp_path, tool_round):
    path = tmp_path / "run.json"
    path.write_text(json.dumps(tool_round + [{"role": "user", "content": "more"},
                                             {"role": "assistant", "content": "done"}]))
    return path


@pytest.mark.django_db
def test_replay_writes_the_transcript_and_resumes_without_duplicates(transcript, user, monkeypatch):
    from flows import tasks

    monkeypatch.setattr(tasks.summarize_chain_task, "delay", lambda *a: None)
    call_command("replay", str(transcript), speed=0, owner="alice", no_worker=True)
    chain = Chain.objects.get(agent__flow__title="Replay: run.json")
    assert chain.last_seq == 7
    messages = json.loads(transcript.read_text()) + [{"role": "user", "content": "and one more"}]
    transcript.write_text(json.dumps(messages))
    call_command("replay", str(transcript), speed=0, owner="alice", no_worker=True)
    assert list(Message.objects.filter(chain=chain).values_list("seq", flat=True)) == list(range(1, 9))
    assert Flow.objects.filter(title="Replay: run.json").count() == 1


@pytest.mark.django_db
def test_replay_refuses_a_different_transcript_under_the_same_title(transcript, user, tmp_path, monkeypatch):
    from flows import tasks

    monkeypatch.setattr(tasks.summarize_chain_task, "delay", lambda *a: None)
    call_command("replay", str(transcript), speed=0, owner="alice", no_worker=True)
    transcript.write_text(json.dumps([{"role": "user", "content": "something else"}]))
    with pytest.raises(CommandError, match="other messages"):
        call_command("replay", str(transcript), speed=0, owner="alice", no_worker=True)


@pytest.mark.django_db
def test_replay_reports_unreadable_files_clearly(tmp_path, user):
    bad = tmp_path / "bad.json"
    bad.write_text('{"not": "a chain"}')
    with pytest.raises(CommandError, match="bad.json"):
        call_command("replay", str(bad), speed=0, owner="alice", no_worker=True)
    with pytest.raises(CommandError, match="cannot read"):
        call_command("replay", str(tmp_path / "missing.json"), owner="alice", no_worker=True)
