"""Browser test fixtures: the real product (`manage.py run --no-demo`: Daphne, embedded worker, in-memory layer)
in a subprocess on a free port with its own SQLite file, and a headless Debian Chromium driven by Playwright.

Agents write through the HTTP API with a bearer token, so appends, summarization and live events all happen in
the server process exactly as in production. Any JavaScript dialog (alert/confirm/prompt) fails the test.
"""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.fakes import free_port

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--disable-gpu", "--disable-quic", "--disable-dev-shm-usage", "--no-first-run"]
SCREENSHOTS = ROOT / "artifacts" / "screenshots"
PASSWORD = "browser-test-password-1"
SERVER_START_SECONDS = 60
SETUP_CODE = """
import json
from django.contrib.auth import get_user_model
from flows.ingest import api_token_create
users = get_user_model()
alice = users.objects.create_user("alice", password={password!r})
users.objects.create_user("mallory", password={password!r})
_, token = api_token_create(user=alice, name="e2e")
print("SETUP" + json.dumps({{"token": token}}))
"""
DEMO_FLOW_CODE = """
import json
from django.contrib.auth import get_user_model
from flows.demo.script import demo_create
flow, chain = demo_create(owner=get_user_model().objects.get(username="alice"), title={title!r})
print("SETUP" + json.dumps({{"flow": flow.pk, "chain": chain.pk}}))
"""


@dataclass
class Server:
    url: str
    var_dir: Path
    env: dict[str, str]
    token: str = ""

    def manage_shell(self, code: str) -> dict[str, Any]:
        out = subprocess.run([sys.executable, "manage.py", "shell", "-c", code], cwd=ROOT, env=self.env,
                             capture_output=True, text=True, timeout=60, check=True).stdout
        line = next(x for x in out.splitlines() if x.startswith("SETUP"))
        return json.loads(line[len("SETUP"):])

    def api(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method, headers={
            "Authorization": f"Bearer {self.token}", "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as res:
            return json.loads(res.read() or b"null")

    def demo_flow(self, title: str) -> dict[str, int]:
        """A flow with the demo's small summarizer limits and 16k window, owned by alice."""
        return self.manage_shell(DEMO_FLOW_CODE.format(title=title))

    def append(self, chain_id: int, messages: list[dict[str, Any]]) -> dict[str, Any]:
        return self.api("POST", f"/api/chains/{chain_id}/messages", {"messages": messages})

    def settle(self, chain_id: int, *, quiet_polls: int = 4, timeout: float = 60.0) -> None:
        """Wait until the worker is done with the chain (no running event, view version unchanged for a
        second): a page opened earlier would swap its view panel under the test's keys or clicks."""
        deadline, last, quiet = time.monotonic() + timeout, None, 0
        while quiet < quiet_polls:
            if time.monotonic() > deadline:
                raise AssertionError(f"chain {chain_id} kept changing")
            time.sleep(0.25)
            version = self.api("GET", f"/api/chains/{chain_id}?limit=1")["stats"]["view_version"]
            running = self.db("SELECT count(*) FROM flows_summaryevent WHERE chain_id = ? AND outcome = 'running'",
                              (chain_id,))[0][0]
            quiet = quiet + 1 if version == last and not running else 0
            last = version

    def db(self, sql: str, params: tuple = ()) -> list[tuple]:
        """Read the server's database directly (read-only), to check what the browser did not change."""
        with sqlite3.connect(f"file:{self.var_dir / 'db.sqlite3'}?mode=ro", uri=True) as conn:
            return conn.execute(sql, params).fetchall()


def _wait_until_up(url: str, proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + SERVER_START_SECONDS
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited early:\n{log.read_text()[-3000:]}")
        try:
            urllib.request.urlopen(url + "/accounts/login/", timeout=2)
            return
        except (urllib.error.URLError, ConnectionError, OSError):
            time.sleep(0.3)
    raise RuntimeError(f"server did not answer within {SERVER_START_SECONDS} s:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[Server]:
    with serve(tmp_path_factory) as srv:
        yield srv


@contextmanager
def serve(tmp_path_factory, extra_env: dict[str, str] | None = None) -> Iterator[Server]:
    """The product in a subprocess (a module's `server` fixture may pass settings through `extra_env`)."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Debian chromium not found at {CHROMIUM}")
    var_dir = tmp_path_factory.mktemp("e2e-var")
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "DJANGO_ALLOW_ASYNC_UNSAFE")}
    env.update({"PENTAGI_WEB_VAR_DIR": str(var_dir), "SECRET_KEY": "e2e-only-secret", "PYTHONUNBUFFERED": "1"})
    env.update(extra_env or {})
    port = free_port()
    srv = Server(url=f"http://127.0.0.1:{port}", var_dir=var_dir, env=env)
    log = var_dir / "server.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "manage.py", "run", "--no-demo", "--port", str(port)], cwd=ROOT,
                                env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        _wait_until_up(srv.url, proc, log)
        srv.token = srv.manage_shell(SETUP_CODE.format(password=PASSWORD))["token"]
        yield srv
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(var_dir, ignore_errors=True)


@pytest.fixture
def page(server: Server):
    """A logged-in page; a JavaScript dialog anywhere fails the test."""
    from playwright.sync_api import sync_playwright

    dialogs: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        pg = browser.new_page(viewport={"width": 1440, "height": 1000})
        pg.set_default_timeout(20_000)

        def on_dialog(dialog) -> None:
            dialogs.append(dialog.message)
            dialog.dismiss()

        pg.on("dialog", on_dialog)
        login(pg, server)
        yield pg
        browser.close()
    assert not dialogs, f"a JavaScript dialog opened: {dialogs}"


def login(page, server: Server, username: str = "alice") -> None:
    page.goto(server.url + "/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(server.url + "/")


def screenshot(page, name: str, *, full_page: bool = False) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=full_page)
    return path


def wait_for_js(page, expression: str, *, timeout: float = 20_000) -> None:
    """Wait until the JavaScript `expression` is truthy on the page.

    Playwright's `wait_for_function` compiles its predicate with `new Function`, which the pages' CSP
    (`script-src 'self'`, no 'unsafe-eval') refuses; `page.evaluate` runs through the DevTools protocol and
    is not subject to it, so polling it keeps the tests on the real policy instead of bypassing it."""
    deadline = time.monotonic() + timeout / 1000
    while not page.evaluate(expression):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} ms waiting for: {expression}")
        page.wait_for_timeout(100)
