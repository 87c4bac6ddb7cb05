"""Real processes for the pipeline integration tests: Daphne, Celery workers, `manage.py run`, a fake LLM.

Every stack gets its own var dir (SQLite file, secret key), its own PostgreSQL database when asked, and its
own Redis key prefix, so parallel test runs sharing one Redis or one PostgreSQL never see each other.
"""
from __future__ import annotations

import asyncio
import json
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
REDIS_URL = "redis://127.0.0.1:6379"
POSTGRES_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
READY_TIMEOUT_SECONDS = 30
EVENT_TIMEOUT_SECONDS = 20
_INHERITED_OUT = ("DATABASE_URL", "REDIS_URL", "REDIS_KEY_PREFIX", "CELERY_TASK_ALWAYS_EAGER", "LLM_SERVER_URL",
                  "OPENAI_API_KEY", "DJANGO_ALLOW_ASYNC_UNSAFE")

PROVISION = """
import json, secrets
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
from django.contrib.sessions.backends.db import SessionStore
from flows.ingest import api_token_create
user = get_user_model().objects.create_user("pipeline", password=secrets.token_urlsafe(16))
_, token = api_token_create(user=user, name="pipeline tests")
session = SessionStore()
session[SESSION_KEY] = str(user.pk)
session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
session[HASH_SESSION_KEY] = user.get_session_auth_hash()
session.create()
print("PROVISIONED " + json.dumps({"token": token, "session": session.session_key}))
"""


def redis_up() -> bool:
    try:
        import redis

        return bool(redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1).ping())
    except Exception:
        return False


def postgres_up() -> bool:
    try:
        import psycopg

        psycopg.connect(POSTGRES_ADMIN_URL, connect_timeout=2).close()
        return True
    except Exception:
        return False


@dataclass
class Stack:
    """Processes sharing one configuration (environment); stopped, and their Redis keys removed, by close()."""

    var_dir: Path
    env: dict[str, str]
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)

    @classmethod
    def create(cls, var_dir: Path, **extra: str) -> Stack:
        env = {k: v for k, v in os.environ.items() if k not in _INHERITED_OUT}
        env.update(PENTAGI_WEB_VAR_DIR=str(var_dir), SECRET_KEY="pipeline-tests-" + secrets.token_hex(16),
                   DJANGO_SETTINGS_MODULE="pentagi_web.settings", PYTHONUNBUFFERED="1", **extra)
        return cls(var_dir=var_dir, env=env)

    def manage(self, *args: str) -> str:
        done = subprocess.run([PYTHON, "manage.py", *args], cwd=ROOT, env=self.env, capture_output=True,
                              text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"manage.py {args[0]} failed:\n{done.stdout}\n{done.stderr}")
        return done.stdout

    def provision(self) -> dict[str, str]:
        """Migrate, then create a user with a bearer token and a logged-in session (for the WebSocket)."""
        self.manage("migrate", "--noinput")
        out = self.manage("shell", "-c", PROVISION)
        line = next(x for x in out.splitlines() if x.startswith("PROVISIONED "))
        return json.loads(line.removeprefix("PROVISIONED "))

    def start(self, name: str, args: list[str]) -> subprocess.Popen:
        log = open(self.var_dir / f"{name}.log", "wb")
        proc = subprocess.Popen(args, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        self.procs[name] = proc
        return proc

    def start_worker(self, name: str = "worker") -> subprocess.Popen:
        proc = self.start(name, [PYTHON, "-m", "celery", "-A", "pentagi_web", "worker", "--pool=solo",
                                 "--loglevel=INFO", "--without-heartbeat", "--without-mingle", "--without-gossip",
                                 "-n", f"{name}-{secrets.token_hex(4)}@%h"])
        self.wait_log(name, "ready.", proc)
        return proc

    def start_daphne(self, port: int) -> subprocess.Popen:
        proc = self.start("daphne", [PYTHON, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
                                     "pentagi_web.asgi:application"])
        wait_http(f"http://127.0.0.1:{port}/accounts/login/", proc, self.log("daphne"))
        return proc

    def log(self, name: str) -> str:
        path = self.var_dir / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def wait_log(self, name: str, needle: str, proc: subprocess.Popen) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_SECONDS
        while needle not in self.log(name):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{name} did not get ready:\n{self.log(name)[-3000:]}")
            time.sleep(0.1)

    def kill(self, name: str) -> None:
        proc = self.procs.pop(name)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)

    def close(self) -> None:
        for name in list(self.procs):
            proc = self.procs.pop(name)
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=5)
        prefix = self.env.get("REDIS_KEY_PREFIX")
        if prefix and redis_up():
            import redis

            for db in (0, 1):
                client = redis.Redis.from_url(f"{REDIS_URL}/{db}")
                keys = list(client.scan_iter(match=prefix + "*"))
                if keys:
                    client.delete(*keys)


def wait_http(url: str, proc: subprocess.Popen, log: str = "") -> None:
    deadline = time.monotonic() + READY_TIMEOUT_SECONDS
    while True:
        try:
            urllib.request.urlopen(url, timeout=2).read()
            return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{url} never answered (exit {proc.poll()}):\n{log[-3000:]}") from None
            time.sleep(0.1)


def api(base: str, method: str, path: str, token: str, body: Any = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(base + path, data=data, method=method, headers={
        "Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


async def _watch(ws_url: str, origin: str, session: str, act, want: set[str]) -> list[dict[str, Any]]:
    import websockets

    frames: list[dict[str, Any]] = []
    async with websockets.connect(ws_url, origin=origin, additional_headers={"Cookie": f"sessionid={session}"},
                                  open_timeout=10) as ws:
        hello = json.loads(await asyncio.wait_for(ws.recv(), timeout=10))
        assert hello["type"] == "hello", hello
        await asyncio.get_running_loop().run_in_executor(None, act)
        deadline = time.monotonic() + EVENT_TIMEOUT_SECONDS
        while not want <= {f["type"] for f in frames}:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            try:
                frames.append(json.loads(await asyncio.wait_for(ws.recv(), timeout=remaining)))
            except TimeoutError:
                break
    return frames


TOOL_ROUND = [
    {"role": "system", "content": "You are a pentester."},
    {"role": "user", "content": "scan 10.0.0.5"},
    {"role": "assistant", "content": None, "tool_calls": [{"id": "call_aaaaaaaaaaaaaaaaaaaaaaaa", "type": "function",
                                                           "function": {"name": "terminal",
                                                                        "arguments": '{"input": "nmap 10.0.0.5"}'}}]},
    {"role": "tool", "tool_call_id": "call_aaaaaaaaaaaaaaaaaaaaaaaa", "content": "22/tcp open ssh"},
    {"role": "assistant", "content": "Port 22 is open."},
]


def assert_summarized_live(frames: list[dict[str, Any]], chain: dict[str, Any], log: str) -> None:
    """The client saw the append, then the worker's new view; the API shows that view (version 1)."""
    types = [f["type"] for f in frames]
    assert "message.appended" in types and "view.updated" in types, (types, log[-3000:])
    assert types.index("message.appended") < types.index("view.updated")
    appended = next(f for f in frames if f["type"] == "message.appended")
    assert appended["last_seq"] == len(TOOL_ROUND)
    updated = next(f for f in frames if f["type"] == "view.updated")
    assert updated["version"] == 1 and updated["raw_seq_to"] == len(TOOL_ROUND)
    assert chain["stats"]["view_version"] == 1 and chain["view"] == TOOL_ROUND


def append_and_watch(port: int, creds: dict[str, str]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Through the HTTP API: a flow, an agent, one turn appended while a WebSocket client listens.
    Returns the frames received and the chain as the API shows it afterwards."""
    base, token = f"http://127.0.0.1:{port}", creds["token"]
    flow = api(base, "POST", "/api/flows", token, {"title": "pipeline"})
    agent = api(base, "POST", f"/api/flows/{flow['id']}/agents", token, {"agent_type": "pentester"})
    chain_id = agent["chain_id"]

    def act() -> None:
        api(base, "POST", f"/api/chains/{chain_id}/messages", token, {"messages": TOOL_ROUND})

    frames = asyncio.run(_watch(f"ws://127.0.0.1:{port}/ws/chains/{chain_id}/", base, creds["session"], act,
                                {"message.appended", "view.updated"}))
    return frames, api(base, "GET", f"/api/chains/{chain_id}", token)


class FakeLLM:
    """An OpenAI-compatible endpoint on 127.0.0.1 whose completions wait until `release` is set."""

    def __init__(self) -> None:
        self.requests = 0
        self.first_request = threading.Event()
        self.release = threading.Event()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, payload: dict[str, Any]) -> None:
                body = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                self._send({"object": "list", "data": [{"id": "fake-model", "object": "model"}]})

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                owner.requests += 1
                owner.first_request.set()
                owner.release.wait(timeout=60)
                try:
                    self._send({"id": "cmpl-1", "object": "chat.completion", "created": 0, "model": "fake-model",
                                "choices": [{"index": 0, "finish_reason": "stop", "message": {
                                    "role": "assistant", "content": "The agent scanned hosts; ssh is open."}}],
                                "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}})
                except OSError:
                    pass  # the worker that asked was killed

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
