"""The two deployments issue 26 attacked, started for real, and what a test measures from outside them.

`embedded`: `manage.py run --no-demo` on SQLite (memory broker, embedded worker, in-memory layer).
`services`: PostgreSQL + Redis + plain `daphne pentagi_web.asgi:application` + a separate Celery worker (skipped
when PostgreSQL or Redis is not answering on loopback). Each gets a throwaway database / var dir / key prefix.
A test reads the server's resident memory from /proc and a probe request's latency, never the server's own view.
"""
from __future__ import annotations

import contextlib
import secrets
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.fakes import free_port
from tests.flows.pipeline_live import POSTGRES_ADMIN_URL, PYTHON, REDIS_URL, Stack, postgres_up, redis_up, wait_http

DEPLOYMENTS = ("embedded", "services")


@dataclass
class Deployment:
    name: str
    stack: Stack
    port: int
    pid: int
    token: str
    session: str

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def rss_bytes(self) -> int:
        """The server process's resident memory, read from /proc (what the kernel says, not the process)."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise RuntimeError("no VmRSS")

    def log(self) -> str:
        return self.stack.log("server")


@contextlib.contextmanager
def _database() -> Iterator[str]:
    import psycopg

    name = f"pgw_rob_{secrets.token_hex(6)}"
    with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"postgres://postgres@127.0.0.1:5432/{name}"
    finally:
        with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextlib.contextmanager
def deployment(name: str, var_dir: Path, *, worker: bool = False, **env: str) -> Iterator[Deployment]:
    """Start one deployment; `worker` adds the Celery worker to `services` (`embedded` always has one)."""
    with contextlib.ExitStack() as cleanup:
        if name == "services":
            if not (postgres_up() and redis_up()):
                pytest.skip("PostgreSQL or Redis is not answering on loopback")
            env = {"DATABASE_URL": cleanup.enter_context(_database()), "REDIS_URL": REDIS_URL,
                   "REDIS_KEY_PREFIX": f"pgw-test-{secrets.token_hex(6)}:", **env}
        stack = Stack.create(var_dir, **env)
        cleanup.callback(stack.close)
        creds = stack.provision()
        port = free_port()
        if name == "services":
            args = [PYTHON, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "pentagi_web.asgi:application"]
        else:
            args = [PYTHON, "manage.py", "run", "--no-demo", "--port", str(port)]
        proc = stack.start("server", args)
        wait_http(f"http://127.0.0.1:{port}/accounts/login/", proc, stack.log("server"))
        if worker and name == "services":
            stack.start_worker()
        yield Deployment(name, stack, port, proc.pid, creds["token"], creds["session"])


def probe_seconds(base: str, path: str = "/accounts/login/") -> float:
    """How long an unrelated GET takes right now."""
    started = time.monotonic()
    with urllib.request.urlopen(base + path, timeout=60) as response:
        response.read()
    return time.monotonic() - started


@dataclass
class RawAnswer:
    status: int
    headers: dict[str, str]
    body: bytes


def read_answer(sock: socket.socket, timeout: float = 20.0) -> RawAnswer:
    """Read one HTTP/1.1 response (Content-Length framed, or until the server closes)."""
    sock.settimeout(timeout)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    if not lines or not lines[0].startswith("HTTP/"):
        raise ConnectionError(f"no HTTP answer: {data[:200]!r}")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    length = int(headers.get("content-length", "-1"))
    while length < 0 or len(rest) < length:
        try:
            chunk = sock.recv(65536)
        except (ConnectionResetError, TimeoutError):
            break
        if not chunk:
            break
        rest += chunk
    return RawAnswer(int(lines[0].split()[1]), headers, rest if length < 0 else rest[:length])


def send_head(port: int, method: str, path: str, headers: dict[str, str]) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=20)
    head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    sock.sendall(head.encode() + b"\r\n")
    return sock


def post(base: str, path: str, body: bytes, headers: dict[str, str], method: str = "POST") -> tuple[int, bytes]:
    request = urllib.request.Request(base + path, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()
