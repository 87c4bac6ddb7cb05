"""Issue 12 item 1 in a real browser: `manage.py replay` and `manage.py import_chain` run in their own processes
beside `manage.py run` (embedded default, no Redis); the open chain page shows the replay live without a reload
and an imported chain gets its view from the server's worker."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.e2e.conftest import ROOT, Server, screenshot, wait_for_js
from tests.e2e.test_dashboard import open_live, wait_for_seq
from tests.flows.test_relay_live import campaign

pytestmark = pytest.mark.browser

FLOW_CODE = """
import json
from django.contrib.auth import get_user_model
from flows.ingest import agent_create, flow_create
flow = flow_create(owner=get_user_model().objects.get(username="alice"), title={title!r})
chain = agent_create(flow=flow, agent_type="pentester").chains.get(is_active=True)
print("SETUP" + json.dumps({{"chain": chain.pk}}))
"""


def manage(server: Server, *args: str) -> str:
    done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=server.env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_a_replay_started_in_another_process_appears_live_without_reload(page, server, tmp_path):
    messages = campaign(seed=5)
    transcript = tmp_path / "other-process.json"
    transcript.write_text(json.dumps(messages))
    chain_id = server.manage_shell(FLOW_CODE.format(title="Replay: other-process.json"))["chain"]
    open_live(page, server, chain_id)
    replay = subprocess.Popen([sys.executable, "manage.py", "replay", str(transcript), "--owner", "alice",
                               "--speed", "4"], cwd=ROOT, env=server.env, stdout=subprocess.PIPE, text=True)
    try:
        wait_for_seq(page, 1)  # the first turn is on screen while the replay is still running
        assert replay.poll() is None
        wait_for_seq(page, len(messages))
        wait_for_js(page, "window.pentagiLive.state.stats.swaps > 0")  # the server's worker summarized
    finally:
        out, _ = replay.communicate(timeout=120)
    assert "is running" in out and replay.returncode == 0
    assert page.evaluate("window.__notReloaded") is True
    screenshot(page, "other-process-replay")


def test_a_chain_imported_by_another_process_gets_its_view(page, server, tmp_path):
    transcript = tmp_path / "imported-elsewhere.json"
    transcript.write_text(json.dumps(campaign(seed=6)))
    out = manage(server, "import_chain", str(transcript), "--owner", "alice")
    chain_id = int(out.split("chain ")[-1])
    page.goto(f"{server.url}/chains/{chain_id}/")
    for _attempt in range(40):
        if server.db("SELECT COUNT(*) FROM flows_chainview WHERE chain_id = ?", (chain_id,))[0][0]:
            break
        page.wait_for_timeout(500)
    page.reload()
    assert page.locator(".vmsg").count() > 0
    screenshot(page, "other-process-import")


def test_a_transcript_uploaded_in_the_browser_replays_live(page, server, tmp_path):
    messages = campaign(seed=7)
    transcript = tmp_path / "uploaded.json"
    transcript.write_text(json.dumps(messages))
    page.goto(server.url + "/")
    page.click("text=Upload a transcript…")
    page.set_input_files("#id_file", str(transcript))
    page.fill("#id_title", "Uploaded live")
    page.check("#id_replay")
    page.fill("#id_speed", "4")
    screenshot(page, "upload-form")
    page.click("button[type=submit]:has-text('Upload')")
    page.wait_for_selector("#live-status[data-state='live']")
    page.evaluate("window.__notReloaded = true")
    wait_for_seq(page, len(messages))  # arrives turn by turn over the socket, no reload
    assert page.evaluate("window.__notReloaded") is True
    wait_for_js(page, "window.pentagiLive.state.stats.swaps > 0")
    screenshot(page, "upload-replayed")
