"""Start and stop a real pentagi-web server for bench/server_load.py, on 127.0.0.1 only.

One `Server` is one configuration: a throwaway database (SQLite file in a temp dir, or a new PostgreSQL
database dropped afterwards), the channel layer (embedded in-memory, or Redis with a separate Celery worker
process), `manage.py migrate`, a user with a password and an API token made through manage.py, and
`manage.py run --no-demo` (Daphne with the embedded worker when there is no Redis). For Redis it starts a
private redis-server on a free port when the binary exists, so the benchmark neither reads nor feeds queues of
anything else using the machine's Redis; otherwise it uses REDIS_URL (default redis://127.0.0.1:6379).
"""
from __future__ import annotations

import http.client
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Server", "ServerError", "free_port", "postgres_available", "redis_available"]

ROOT = Path(__file__).resolve().parent.parent
HOST = "127.0.0.1"
START_TIMEOUT_SECONDS = 60.0
STOP_TIMEOUT_SECONDS = 10.0
PG_ADMIN_URL = os.environ.get("BENCH_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres")
SHARED_REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379")
BENCH_USER = "bench"


class ServerError(RuntimeError):
    pass


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def _port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((HOST, port)) == 0


def postgres_available() -> bool:
    return _port_open(5432)


def redis_available() -> bool:
    return bool(shutil.which("redis-server")) or _port_open(6379)


def _pg_admin(sql: str) -> None:
    import psycopg

    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        conn.execute(sql)


@dataclass
class Server:
    db: str                      # "sqlite" | "postgres"
    layer: str                   # "embedded" | "redis"
    port: int = field(default_factory=free_port)
    processes: int = 1           # server processes on one database; more than one only with Redis (the scale-out)
    ports: list[int] = field(default_factory=list)  # one per server process, `port` first
    token: str = ""
    password: str = field(default_factory=lambda: secrets.token_urlsafe(12))
    _tmp: Path | None = None
    _pg_name: str = ""
    _procs: list[subprocess.Popen] = field(default_factory=list)
    _roles: list[str] = field(default_factory=list)
    _env: dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def __enter__(self) -> Server:
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def _start(self) -> None:
        self._tmp = Path(tempfile.mkdtemp(prefix="pentagi-bench-"))
        env = {**os.environ, "PENTAGI_WEB_VAR_DIR": str(self._tmp), "SECRET_KEY": secrets.token_urlsafe(32),
               "ALLOWED_HOSTS": f"{HOST},localhost", "LOG_LEVEL": "WARNING", "DEBUG": "false",
               # every simulated viewer is the same user: lift the per-user socket cap (20) above the viewer count
               "WS_MAX_PER_USER": "500"}
        env.pop("DATABASE_URL", None)
        env.pop("REDIS_URL", None)
        if self.db == "postgres":
            self._pg_name = f"pentagi_bench_{os.getpid()}_{secrets.token_hex(3)}"
            _pg_admin(f'CREATE DATABASE "{self._pg_name}"')
            env["DATABASE_URL"] = PG_ADMIN_URL.rsplit("/", 1)[0] + "/" + self._pg_name
        if self.layer == "redis":
            env["REDIS_URL"] = self._redis_url()
        self._env = env
        self._manage("migrate", "--no-input", "-v", "0")
        self._manage("shell", "-c", "from django.contrib.auth import get_user_model as g; "
                     f"g().objects.create_user({BENCH_USER!r}, password={self.password!r})")
        self.token = self._manage("create_api_token", BENCH_USER, "--name", "bench").strip().splitlines()[-1]
        if self.processes > 1 and self.layer != "redis":
            raise ServerError("several server processes need the Redis channel layer (the scale-out deployment)")
        self.ports = [self.port] + [free_port() for _ in range(self.processes - 1)]
        for port in self.ports:  # one after another: each `run` ensures the demo user and recovers runs at start
            self._spawn([sys.executable, "manage.py", "run", "--no-demo", "--host", HOST, "--port", str(port)],
                        role="server")
            self._wait_http(port)
        if self.layer == "redis":
            self._spawn([sys.executable, "-m", "celery", "-A", "pentagi_web", "worker", "--pool", "solo",
                         "--loglevel", "WARNING", "--without-gossip", "--without-mingle", "--without-heartbeat"],
                        role="worker")
            time.sleep(2.0)  # let the Celery worker finish starting

    def _redis_url(self) -> str:
        if not shutil.which("redis-server"):
            return SHARED_REDIS_URL
        port = free_port()
        self._spawn(["redis-server", "--bind", HOST, "--port", str(port), "--save", "", "--appendonly", "no"],
                    role="redis")
        deadline = time.monotonic() + 10
        while not _port_open(port):
            if time.monotonic() > deadline:
                raise ServerError("private redis-server did not start")
            time.sleep(0.05)
        return f"redis://{HOST}:{port}"

    def manage(self, *args: str) -> str:
        """`manage.py *args` against this server's database and settings; its standard output."""
        return self._manage(*args)

    def _manage(self, *args: str) -> str:
        done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=self._env, capture_output=True,
                              text=True, timeout=120)
        if done.returncode != 0:
            raise ServerError(f"manage.py {args[0]} failed: {done.stderr.strip()[-500:]}")
        return done.stdout

    def _spawn(self, argv: list[str], *, role: str) -> None:
        log = open(self._tmp / f"{Path(argv[0]).name}-{len(self._procs)}.log", "wb")  # noqa: SIM115
        self._procs.append(subprocess.Popen(argv, cwd=ROOT, env=self._env, stdout=log, stderr=subprocess.STDOUT,
                                            start_new_session=True))
        self._roles.append(role)

    def pids(self) -> list[tuple[str, int]]:
        """(role, process id) of each process started: "server" (Daphne, and the worker when embedded; one per
        server process), "worker" (the Celery worker with Redis), "redis" (the private redis-server)."""
        return [(role, proc.pid) for role, proc in zip(self._roles, self._procs, strict=True)]

    @property
    def pg_name(self) -> str:
        """The throwaway PostgreSQL database's name ("" on SQLite)."""
        return self._pg_name

    def _wait_http(self, port: int) -> None:
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            if any(p.poll() is not None for p in self._procs):
                raise ServerError(f"a server process exited early; logs in {self._tmp}")
            conn = http.client.HTTPConnection(HOST, port, timeout=30)
            try:
                status, _ = self.request("GET", "/api/openapi.json", conn=conn)
                if status == 200:
                    time.sleep(0.2)
                    return
            except OSError:
                pass
            finally:
                conn.close()
            time.sleep(0.2)
        raise ServerError(f"the server did not answer within {START_TIMEOUT_SECONDS:.0f} s")

    def request(self, method: str, path: str, body: Any = None, *,
                conn: http.client.HTTPConnection | None = None, port: int = 0) -> tuple[int, Any]:
        """One JSON request with the bearer token; reuses `conn` (keep-alive) when given, else connects to `port`
        (default: the first server process's)."""
        own = conn is None
        conn = conn or http.client.HTTPConnection(HOST, port or self.port, timeout=30)
        try:
            headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}
            conn.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
            return resp.status, (json.loads(data) if data else None)
        finally:
            if own:
                conn.close()

    def new_chain(self, title: str) -> int:
        status, flow = self.request("POST", "/api/flows", {"title": title})
        if status != 201:
            raise ServerError(f"flow create: {status} {flow}")
        status, agent = self.request("POST", f"/api/flows/{flow['id']}/agents", {"agent_type": "pentester"})
        if status != 201:
            raise ServerError(f"agent create: {status} {agent}")
        return int(agent["chain_id"])

    def session_cookie(self) -> str:
        """Log in through the login form (CSRF and all) and return the Cookie header value."""
        conn = http.client.HTTPConnection(HOST, self.port, timeout=30)
        try:
            conn.request("GET", "/accounts/login/")
            resp = conn.getresponse()
            resp.read()
            csrf = _cookie(resp.getheader("Set-Cookie") or "", "csrftoken")
            form = f"username={BENCH_USER}&password={self.password}&csrfmiddlewaretoken={csrf}"
            conn.request("POST", "/accounts/login/", body=form, headers={
                "Content-Type": "application/x-www-form-urlencoded", "Cookie": f"csrftoken={csrf}",
                "Referer": f"{self.url}/accounts/login/", "Origin": self.url})
            resp = conn.getresponse()
            resp.read()
            session = _cookie(", ".join(resp.headers.get_all("Set-Cookie") or []), "sessionid")
            if resp.status != 302 or not session:
                raise ServerError(f"login failed: HTTP {resp.status}")
            return f"sessionid={session}"
        finally:
            conn.close()

    def stop(self) -> None:
        for proc in reversed(self._procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in reversed(self._procs):
            try:
                proc.wait(timeout=STOP_TIMEOUT_SECONDS)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        self._procs.clear()
        self._roles.clear()
        if self._pg_name:
            try:
                _pg_admin(f'DROP DATABASE IF EXISTS "{self._pg_name}" WITH (FORCE)')
            except Exception as exc:  # noqa: BLE001 - report, but never hide the figures already printed
                print(f"note: could not drop {self._pg_name}: {exc}", file=sys.stderr)
            self._pg_name = ""
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None


def _cookie(header: str, name: str) -> str:
    for part in header.replace(",", ";").split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value
    return ""
