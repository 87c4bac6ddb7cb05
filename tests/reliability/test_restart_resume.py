"""A replay (`manage.py replay`) stopped in the middle resumes cleanly: every message once, in order."""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from flows.models import Chain, Flow
from tests.conftest import ROOT
from tests.flows.pipeline_support import turn
from tests.reliability.invariants import assert_chain_intact

TURNS = 12


@pytest.fixture
def transcript(tmp_path) -> tuple[Path, list[dict]]:
    messages = [{"role": "system", "content": "You are a careful pentester."}]
    for i in range(TURNS):
        messages += turn(i, output_bytes=300)
    path = tmp_path / "run.json"
    path.write_text(json.dumps(messages))
    return path, messages


def _crash_after(monkeypatch, batches: int) -> None:
    """Make the replay die (like a killed process) after `batches` committed appends."""
    import flows.management.commands.replay as replay

    real, done = replay.chain_append, {"n": 0}

    def append(**kwargs):
        if done["n"] == batches:
            raise KeyboardInterrupt("killed")
        done["n"] += 1
        return real(**kwargs)

    monkeypatch.setattr(replay, "chain_append", append)


@pytest.mark.django_db
@pytest.mark.parametrize("crash_after", [1, 7, 20])
def test_a_replay_killed_between_batches_resumes_without_loss_or_duplicates(transcript, monkeypatch, user,
                                                                              crash_after):
    path, messages = transcript
    opts = {"speed": 0, "owner": user.username, "no_worker": True, "title": "restart"}
    _crash_after(monkeypatch, crash_after)
    with pytest.raises(KeyboardInterrupt):
        call_command("replay", str(path), **opts)
    monkeypatch.undo()
    call_command("replay", str(path), **opts)
    call_command("replay", str(path), **opts)  # a third run finds nothing left to do
    assert Flow.objects.filter(title="restart").count() == 1
    assert_chain_intact(Chain.objects.get(agent__flow__title="restart"), messages)


@pytest.mark.django_db
def test_resuming_into_a_chain_holding_other_messages_is_refused(transcript, user, tmp_path):
    path, messages = transcript
    opts = {"speed": 0, "owner": user.username, "no_worker": True, "title": "mixed"}
    call_command("replay", str(path), **opts)
    other = tmp_path / "other.json"
    other.write_text(json.dumps([{"role": "user", "content": "a different run"}] + messages[1:]))
    with pytest.raises(CommandError):
        call_command("replay", str(other), **opts)
    assert_chain_intact(Chain.objects.get(agent__flow__title="mixed"), messages)


def _manage(env: dict, *args: str, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "manage.py", *args], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True, **kw)


def _stored(db: Path) -> list[tuple[int, str]]:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT seq, role FROM flows_message ORDER BY seq").fetchall()


def test_a_replay_process_killed_with_sigkill_resumes_cleanly(transcript, tmp_path):
    """The real thing: a separate process on its own SQLite database, killed at a random point."""
    path, messages = transcript
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env.update(PENTAGI_WEB_VAR_DIR=str(tmp_path / "var"), SECRET_KEY="restart-test", LOG_LEVEL="WARNING")
    assert _manage(env, "migrate", "-v", "0").wait(timeout=120) == 0
    args = ("replay", str(path), "--owner", "restarter", "--speed", "40", "--no-worker")
    proc = _manage(env, *args)
    db = tmp_path / "var" / "db.sqlite3"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(_stored_or_empty(db)) < 10:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    assert 0 < len(_stored(db)) < len(messages)
    resumed = _manage(env, *args)
    assert resumed.wait(timeout=120) == 0, resumed.stderr.read()
    rows = _stored(db)
    assert [seq for seq, _ in rows] == list(range(1, len(messages) + 1))
    assert [role for _, role in rows] == [m["role"] for m in messages]


def _stored_or_empty(db: Path) -> list[tuple[int, str]]:
    try:
        return _stored(db)
    except sqlite3.Error:
        return []  # not migrated yet, or locked for a moment
