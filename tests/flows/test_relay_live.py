"""Across real processes, embedded default (no Redis): a `manage.py run` server, and `replay` / `import_chain`
started beside it. The replay's events reach a logged-in WebSocket on the server and its worker summarizes;
an import done while no server ran is summarized when the server starts."""
from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flows.demo.script import demo_turns
from tests.e2e.conftest import ROOT, Server, _wait_until_up
from tests.fakes import free_port

WAIT_SECONDS = 60
SETUP_CODE = """
import json
from django.contrib.auth import get_user_model
from django.test import Client
from flows.ingest import agent_create, flow_create
alice = get_user_model().objects.create_user("alice", password="live-relay-test-pw")
flow = flow_create(owner=alice, title="Replay: campaign.json")
chain = agent_create(flow=flow, agent_type="pentester").chains.get(is_active=True)
client = Client()
client.force_login(alice)
print("SETUP" + json.dumps({"chain": chain.pk, "session": client.cookies["sessionid"].value}))
"""


def campaign(seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [m for kind, batch in demo_turns(rng, "10.10.5.23", first=True) if kind == "append" for m in batch]


def start_server(env: dict[str, str], var_dir: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    log = var_dir / f"server-{port}.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "manage.py", "run", "--no-demo", "--port", str(port)], cwd=ROOT,
                                env=env, stdout=out, stderr=subprocess.STDOUT)
    _wait_until_up(f"http://127.0.0.1:{port}", proc, log)
    return proc, f"http://127.0.0.1:{port}"


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()


def manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def wait_for(what: str, check: Any) -> Any:
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def env(tmp_path) -> Iterator[dict[str, str]]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "DJANGO_ALLOW_ASYNC_UNSAFE")}
    env.update({"PENTAGI_WEB_VAR_DIR": str(tmp_path), "SECRET_KEY": "relay-live-only", "PYTHONUNBUFFERED": "1"})
    yield env
    shutil.rmtree(tmp_path, ignore_errors=True)


def listen(url: str, chain_id: int, session: str, frames: list[dict[str, Any]], ready: threading.Event,
           done: threading.Event) -> None:
    from websockets.sync.client import connect

    ws_url = url.replace("http://", "ws://") + f"/ws/chains/{chain_id}/"
    with connect(ws_url, additional_headers={"Cookie": f"sessionid={session}", "Origin": url}) as socket:
        ready.set()
        while not done.is_set():
            try:
                frames.append(json.loads(socket.recv(timeout=0.5)))
            except TimeoutError:
                continue


def announced_seqs(frames: list[dict[str, Any]]) -> list[int]:
    """Seqs the socket announced: a `message.appended` carries its messages; a burst coalesced into one
    `message.appended_up_to` frame stands for its whole seq range (with or without the bodies)."""
    seqs: set[int] = set()
    for frame in frames:
        if frame["type"] == "message.appended":
            seqs.update(m["seq"] for m in frame["messages"])
        elif frame["type"] == "message.appended_up_to":
            seqs.update(range(frame["first_seq"], frame["last_seq"] + 1))
    return sorted(seqs)


def test_a_replay_in_another_process_reaches_the_servers_sockets_and_worker(env, tmp_path):
    messages = campaign(seed=3)
    transcript = tmp_path / "campaign.json"
    transcript.write_text(json.dumps(messages))
    proc, url = start_server(env, tmp_path)
    srv = Server(url=url, var_dir=tmp_path, env=env)
    frames: list[dict[str, Any]] = []
    ready, done = threading.Event(), threading.Event()
    listener = threading.Thread()
    try:
        ids = srv.manage_shell(SETUP_CODE)
        listener = threading.Thread(target=listen, args=(url, ids["chain"], ids["session"], frames, ready, done))
        listener.start()
        assert ready.wait(20)
        out = manage(env, "replay", str(transcript), "--owner", "alice", "--speed", "0")
        assert "is running" in out and f"chain #{ids['chain']} holds {len(messages)} messages" in out
        seqs = wait_for("every appended message on the socket", lambda: announced_seqs(frames)
                        if any(f.get("last_seq") == len(messages) for f in frames) else None)
        assert seqs == list(range(1, len(messages) + 1))
        wait_for("a view of the whole replay", lambda: any(
            f["type"] == "view.updated" and f["raw_seq_to"] == len(messages) for f in frames))
    finally:
        done.set()
        if listener.is_alive():
            listener.join(timeout=5)
        stop(proc)
    assert not (tmp_path / "server.json").exists()  # the stopped server took its address back


def test_an_import_is_summarized_by_the_running_server_or_by_the_next_start(env, tmp_path):
    for seed in (1, 2):
        (tmp_path / f"t{seed}.json").write_text(json.dumps(campaign(seed)))
    manage(env, "migrate", "--verbosity", "0")
    srv = Server(url="", var_dir=tmp_path, env=env)
    srv.manage_shell('from django.contrib.auth import get_user_model\n'
                     'get_user_model().objects.create_user("alice", password="live-relay-test-pw")\nprint("SETUP{}")')
    out = manage(env, "import_chain", str(tmp_path / "t1.json"), "--owner", "alice")
    assert "no server is running" in out

    def views_of(title: str) -> list[tuple]:
        return srv.db("SELECT v.raw_seq_to, c.last_seq FROM flows_chainview v JOIN flows_chain c ON c.id = v.chain_id "
                      "JOIN flows_agent a ON a.id = c.agent_id JOIN flows_flow f ON f.id = a.flow_id "
                      "WHERE f.title = ?", (title,))

    assert views_of("t1.json") == []
    proc, _url = start_server(env, tmp_path)
    try:
        wait_for("the earlier import's view", lambda: any(seen == last for seen, last in views_of("t1.json")))
        out = manage(env, "import_chain", str(tmp_path / "t2.json"), "--owner", "alice")
        assert "is running" in out
        wait_for("the new import's view", lambda: any(seen == last for seen, last in views_of("t2.json")))
    finally:
        stop(proc)
