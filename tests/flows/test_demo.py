"""The built-in demo agent and the replay command: realistic, valid, lab-only chains that resume cleanly."""
from __future__ import annotations

import json
import random
import re
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from flows.demo import demo_create, demo_run, gateway_turns
from flows.demo.script import DEMO_MODEL, DEMO_SETTINGS, DEMO_WINDOW_TOKENS, demo_turns
from flows.demo.upstream import ScriptedUpstream
from flows.ingest import turn_batches
from flows.models import ApiToken, Chain, Flow, GatewayCall, Message, ModelWindow, SettingsChange, SummaryEvent
from summarizer import validate_messages

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
    from flows.pipeline import tasks
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


def _in_process_post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    """The demo's HTTP call served by this test's Django (the real gateway view, in this process)."""
    extra = {k: v for k, v in headers.items() if k != "Content-Type"}
    response = Client().generic("POST", urlsplit(url).path, body, content_type="application/json", headers=extra)
    return response.status_code, {k.lower(): v for k, v in response.headers.items()}, response.content


def _normal(message: dict[str, Any]) -> dict[str, Any]:
    return {"role": message["role"], "content": message.get("content"), "tool_calls": message.get("tool_calls"),
            "tool_call_id": message.get("tool_call_id") or None}


@pytest.mark.django_db
def test_the_demo_agents_model_calls_go_through_the_gateway(user, monkeypatch):
    from flows.pipeline import tasks
    monkeypatch.setattr(tasks.summarize_chain_task, "delay", lambda *a: None)
    monkeypatch.setattr(tasks.compact_chain_task, "delay", lambda *a: None)
    flow, chain = demo_create(owner=user)
    turns = gateway_turns(owner=user, chain=chain, server="http://testserver", post=_in_process_post)
    count = demo_run(flow=flow, chain=chain, campaigns=1, sleep=lambda s: None, turns=turns)
    raw = [m.to_dict() for m in Message.objects.filter(chain=chain).order_by("seq")]
    script = campaign(5023)
    assert count == len(raw) == len(script)
    assert [_normal(m) for m in raw] == [_normal(m) for m in script]  # every message once, in order
    calls = list(GatewayCall.objects.filter(chain=chain).order_by("pk"))
    assert len(calls) == sum(1 for m in script if m["role"] == "assistant")
    assert {(c.status, c.mode, c.model) for c in calls} == {("ok", "manage", "pentest-agent-16k")}
    assert all(0 < c.sent_tokens <= DEMO_WINDOW_TOKENS for c in calls)
    assert calls[-1].sent_message_count < calls[-1].request_messages  # the model got the summarized view
    assert [c.response_seq for c in calls] == [i + 1 for i, m in enumerate(script) if m["role"] == "assistant"]
    assert ApiToken.objects.filter(user=user).count() == 1  # the agent authenticated with the owner's token


@pytest.mark.django_db
def test_a_demo_whose_first_gateway_call_is_refused_writes_directly(user, monkeypatch):
    from flows.demo.transport import FirstCallFallback
    from flows.pipeline import tasks

    monkeypatch.setattr(tasks.summarize_chain_task, "delay", lambda *a: None)
    monkeypatch.setattr(tasks.compact_chain_task, "delay", lambda *a: None)

    def disallowed_host(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        return 400, {}, b"<h1>Bad Request (400)</h1>"  # what Django answers a Host outside ALLOWED_HOSTS

    flow, chain = demo_create(owner=user)
    turns = FirstCallFallback(gateway_turns(owner=user, chain=chain, server="http://x", post=disallowed_host), chain)
    count = demo_run(flow=flow, chain=chain, campaigns=1, sleep=lambda s: None, turns=turns)
    raw = [m.to_dict() for m in Message.objects.filter(chain=chain).order_by("seq")]
    assert count == len(raw) and [_normal(m) for m in raw] == [_normal(m) for m in campaign(5023)]


def test_the_scripted_model_answers_with_the_script_and_refuses_what_exceeds_its_window():
    upstream = ScriptedUpstream(window_tokens=50)
    try:
        answer = {"role": "assistant", "content": "done"}
        status, body = upstream.answer({"messages": [{"role": "user", "content": "hi"}], "x_demo_answer": answer})
        assert status == 200 and body["choices"][0]["message"] == answer and body["usage"]["prompt_tokens"] > 0
        status, body = upstream.answer({"messages": [{"role": "user", "content": "word " * 200}],
                                        "x_demo_answer": answer})
        assert status == 400 and body["error"]["code"] == "context_length_exceeded"
        assert upstream.answer({"messages": []})[0] == 400  # no script: no answer made up
    finally:
        upstream.close()


@pytest.mark.django_db
def test_demo_run_stops_when_asked(user, monkeypatch):
    import threading

    from flows.pipeline import tasks
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
    from flows.pipeline import tasks
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
    from flows.pipeline import tasks
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


@pytest.mark.django_db
def test_the_foreground_demo_without_a_server_writes_directly_and_leaves_no_provider(user, monkeypatch):
    from flows.models.providers import ProviderConfig
    from flows.pipeline import tasks

    monkeypatch.setattr(tasks.summarize_chain_task, "delay", lambda *a: None)
    monkeypatch.setattr(tasks.compact_chain_task, "delay", lambda *a: None)
    call_command("demo", campaigns=1, speed=1000, owner="alice", no_worker=True)
    chain = Chain.objects.get(agent__flow__owner=user, agent__flow__title__startswith="Demo: ")
    assert chain.last_seq == len(campaign(5023)) and not GatewayCall.objects.exists()
    assert not ProviderConfig.objects.filter(name__startswith="demo").exists()


@pytest.mark.django_db
def test_a_restarted_demo_continues_its_flow_through_the_gateway_and_closes_interrupted_calls(user, monkeypatch):
    from flows.demo import script
    from flows.pipeline import tasks
    monkeypatch.setattr(tasks.summarize_chain_task, "delay", lambda *a: None)
    monkeypatch.setattr(tasks.compact_chain_task, "delay", lambda *a: None)
    flow, chain = demo_create(owner=user)
    first = campaign(5023)
    call = next(i for i, m in enumerate(first) if m.get("tool_calls"))
    turns = gateway_turns(owner=user, chain=chain, server="http://testserver", post=_in_process_post)
    turns.call(first[:call], first[call])  # the first model call, then the server stopped before its tools ran
    reused = script.demo_reuse(owner=user)
    assert reused is not None and reused[0].pk == flow.pk and reused[1].pk == chain.pk
    demo_run(flow=flow, chain=chain, campaigns=1, sleep=lambda s: None, turns=turns)
    raw = Chain.objects.get(pk=chain.pk).raw_messages()
    validate_messages(raw)  # every call answered once: the interrupted ones by the restarted agent
    assert [m for m in raw if "interrupted" in str(m.get("content"))]
    assert Flow.objects.filter(owner=user).count() == 1 and Chain.objects.filter(agent__flow=flow).count() == 1
    assert GatewayCall.objects.filter(chain=chain, status="ok").count() > 1


@pytest.mark.django_db
def test_a_demo_flow_with_another_title_or_one_being_played_is_not_reused(user):
    from flows.demo import script
    flow, _ = demo_create(owner=user, title="Something else")
    assert script.demo_reuse(owner=user) is None
    demo_flow, _ = demo_create(owner=user)
    monkey_handle = script.DemoHandle(demo_flow.pk, None, None)  # type: ignore[arg-type]
    script._running[demo_flow.pk] = monkey_handle
    try:
        assert script.demo_reuse(owner=user) is None
    finally:
        script._running.pop(demo_flow.pk)
