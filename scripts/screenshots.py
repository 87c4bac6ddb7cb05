"""Take the documentation's screenshots from a real server running the demo: the gateway call trace, the chain
page's context breakdown and the flows list on a phone (390 px).

    .venv/bin/python scripts/screenshots.py [--out docs] [--calls 12]

It starts `manage.py run` (with its demo agent) on a free port with a throwaway var dir, waits until the demo has
made `--calls` gateway calls and its chain holds a summary, logs in as the demo user with Playwright and Debian's
/usr/bin/chromium, and writes docs/call-trace.png, docs/context-breakdown.png and docs/phone-flows.png, each
cropped to its region (and refused when over 300 KB). Nothing outside the temp dir and the output dir is touched.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
MAX_BYTES = 300 * 1024
START_SECONDS = 90
DEMO_SECONDS = 300
PASSWORD_RE = re.compile(r"login: user '(?P<user>[^']+)', password '(?P<password>[^']+)'")


@dataclass
class Demo:
    url: str
    var_dir: Path
    user: str
    password: str

    def db(self, sql: str) -> list[tuple[Any, ...]]:
        with sqlite3.connect(f"file:{self.var_dir / 'db.sqlite3'}?mode=ro", uri=True) as conn:
            return conn.execute(sql).fetchall()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait(what: str, seconds: float, ready: Any) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = ready()
        if value:
            return value
        time.sleep(0.5)
    raise SystemExit(f"gave up waiting for {what} after {seconds:.0f} s")


@contextmanager
def demo_server() -> Iterator[Demo]:
    var_dir = Path(tempfile.mkdtemp(prefix="pentagi-shots-"))
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env.update({"PENTAGI_WEB_VAR_DIR": str(var_dir), "SECRET_KEY": "screenshots-only", "PYTHONUNBUFFERED": "1"})
    port, log = _free_port(), var_dir / "server.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "manage.py", "run", "--port", str(port)], cwd=ROOT, env=env,
                                stdout=out, stderr=subprocess.STDOUT)
    try:
        login = _wait("the server to start", START_SECONDS,
                      lambda: proc.poll() is None and "is listening on" in log.read_text()
                      and PASSWORD_RE.search(log.read_text()))
        yield Demo(f"http://127.0.0.1:{port}", var_dir, login["user"], login["password"])
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(var_dir, ignore_errors=True)


def wait_for_demo(demo: Demo, calls: int) -> tuple[int, int]:
    """(chain id, call id) once the demo made `calls` gateway calls and its chain's view holds a summary."""
    def ready() -> tuple[int, int] | None:
        done = demo.db("SELECT count(*) FROM flows_gatewaycall WHERE status = 'ok'")[0][0]
        summaries = demo.db("SELECT count(*) FROM flows_summaryevent WHERE outcome = 'ok'")[0][0]
        if done < calls or not summaries:
            return None
        chain, call = demo.db("SELECT chain_id, id FROM flows_gatewaycall WHERE status = 'ok' "
                              "AND request_params LIKE '%tool%' ORDER BY id DESC LIMIT 1")[0]
        return int(chain), int(call)
    return _wait(f"{calls} demo calls and a summary", DEMO_SECONDS, ready)


def _clip(page: Any, top_selector: str, bottom_selector: str, *, max_height: int) -> dict[str, float]:
    top = page.locator(top_selector).first.bounding_box()
    bottom = page.locator(bottom_selector).first.bounding_box()
    width = page.viewport_size["width"]
    height = min(bottom["y"] + bottom["height"] - top["y"] + 16, max_height)
    return {"x": 0, "y": max(top["y"] - 12, 0), "width": width, "height": height}


def take(demo: Demo, chain: int, call: int, out: Path) -> list[Path]:
    from playwright.sync_api import sync_playwright

    shots = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--disable-gpu", "--no-first-run"])
        page = browser.new_page(viewport={"width": 1440, "height": 1000})
        page.goto(demo.url + "/accounts/login/")
        page.fill("#id_username", demo.user)
        page.fill("#id_password", demo.password)
        page.click("button[type=submit]")
        page.wait_for_url(demo.url + "/")

        page.goto(f"{demo.url}/chains/{chain}/calls/{call}/")
        path = out / "call-trace.png"
        page.screenshot(path=str(path), clip=_clip(page, ".crumbs", ".trace-top", max_height=900))
        shots.append(path)

        page.goto(f"{demo.url}/chains/{chain}/")
        path = out / "context-breakdown.png"
        page.locator("#window-bar").screenshot(path=str(path))
        shots.append(path)

        page.set_viewport_size({"width": 390, "height": 844})
        page.goto(demo.url + "/")
        path = out / "phone-flows.png"
        page.screenshot(path=str(path), clip=_clip(page, ".topbar", ".flows-table tbody tr", max_height=844))
        shots.append(path)
        browser.close()
    return shots


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs", help="where the PNGs go (default: docs/)")
    parser.add_argument("--calls", type=int, default=12, help="gateway calls the demo makes first (default 12)")
    args = parser.parse_args()
    if not Path(CHROMIUM).exists():
        raise SystemExit(f"Debian chromium not found at {CHROMIUM} (apt-get install chromium)")
    args.out.mkdir(parents=True, exist_ok=True)
    with demo_server() as demo:
        chain, call = wait_for_demo(demo, args.calls)
        shots = take(demo, chain, call, args.out)
    for path in shots:
        size = path.stat().st_size
        print(f"{path} {size / 1024:.0f} KB")
        if size > MAX_BYTES:
            raise SystemExit(f"{path} is over {MAX_BYTES // 1024} KB: crop it further")


if __name__ == "__main__":
    main()
