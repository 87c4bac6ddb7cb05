"""`python -m summarizer`: summarize / inspect / tokens, bad input, and the stdlib OpenAI-compatible backend."""
from __future__ import annotations

import io
import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from summarizer import SUMMARY_SYSTEM_PROMPT
from summarizer.cli import BackendError, CliError, main, openai_summarizer

ROOT = Path(__file__).resolve().parents[2]


def _chain(rounds: int = 12, result_bytes: int = 3000) -> list[dict]:
    chain = [{"role": "system", "content": "You are a pentest agent."},
             {"role": "user", "content": "Assess 10.10.5.23 and list open ports."}]
    for i in range(rounds):
        call_id = f"call_{i:024d}"
        chain.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": call_id, "type": "function",
             "function": {"name": "terminal", "arguments": json.dumps({"input": f"nmap -p {1000 + i} 10.10.5.23"})}}]})
        chain.append({"role": "tool", "tool_call_id": call_id,
                      "content": f"{1000 + i}/tcp open unknown\n" + "x" * result_bytes})
    chain.append({"role": "assistant", "content": "Done: ports 1000-1011 are open."})
    return chain


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def chain_file(tmp_path: Path) -> Path:
    path = tmp_path / "chain.json"
    path.write_text(json.dumps(_chain()), encoding="utf-8")
    return path


def test_summarize_prints_the_shorter_chain_and_stats(chain_file):
    code, out, err = _run("summarize", "--profile", "restore", "--input", str(chain_file))
    assert code == 0, err
    assert "messages: 27 ->" in out and "summarize calls:" in out
    assert "[0] system: You are a pentest agent." in out


def test_summarize_json_output_is_machine_readable(chain_file):
    code, out, _ = _run("summarize", "--profile", "restore", "--input", str(chain_file), "--json")
    report = json.loads(out)
    assert code == 0 and report["error"] is None and report["calls"] >= 1
    assert len(report["messages"]) < 27 and len(report["lineage"]) == len(report["messages"])
    assert report["config"]["last_sec_bytes"] == 16384


def test_set_overrides_a_config_field(chain_file):
    code, out, _ = _run("summarize", "--input", str(chain_file), "--json", "--set", "preserve_last=false",
                        "--set", "max_qa_bytes=1000000")
    report = json.loads(out)
    assert code == 0 and report["config"]["preserve_last"] is False and report["config"]["max_qa_bytes"] == 1000000
    assert report["calls"] == 0 and len(report["messages"]) == 27  # nothing to do with the last section unmanaged


def test_it_accepts_an_object_with_a_messages_list(tmp_path):
    path = tmp_path / "wrapped.json"
    path.write_text(json.dumps({"source": "test", "messages": _chain(rounds=2)}), encoding="utf-8")
    code, out, _ = _run("tokens", str(path))
    assert code == 0 and out.strip().splitlines()[-1].startswith("total: ")


@pytest.mark.parametrize(
    ("argv", "reason"),
    [
        (["summarize", "--input", "/no/such/file.json"], "input file not found"),
        (["summarize", "--input", "{bad}"], "malformed JSON"),
        (["summarize", "--input", "{invalid}"], "invalid chain"),
        (["summarize", "--input", "{chain}", "--set", "nope=1"], "unknown setting"),
        (["summarize", "--input", "{chain}", "--set", "max_bp_bytes=lots"], "expected a whole number"),
        (["summarize", "--input", "{chain}", "--set", "use_qa=maybe"], "expected true or false"),
        (["summarize", "--input", "{chain}", "--set", "use_qa=yes"], "expected true or false"),  # Go ParseBool set
        (["summarize", "--input", "{chain}", "--set", "last_section_reserve_percent=150"], "between 0 and 100"),
        (["summarize", "--input", "{chain}", "--set", "novalue"], "key=value"),
        (["summarize", "--input", "{chain}", "--profile", "bogus"], "invalid choice"),
        (["inspect", "{headless}"], "invalid chain"),
        ([], "required"),
    ],
)
def test_bad_input_exits_2_with_one_line(tmp_path, chain_file, argv, reason):
    files = {"{bad}": "{not json", "{invalid}": json.dumps([{"role": "wizard", "content": "x"}]),
             "{headless}": json.dumps([{"role": "assistant", "content": "x"}])}
    args = []
    for arg in argv:
        if arg in files:
            path = tmp_path / f"{len(args)}.json"
            path.write_text(files[arg], encoding="utf-8")
            arg = str(path)
        args.append(str(chain_file) if arg == "{chain}" else arg)
    code, out, err = _run(*args)
    assert code == 2 and reason in err and err.count("\n") == 1 and err.startswith("error: ")


def test_inspect_shows_sections_pairs_bytes_and_tokens(chain_file):
    code, out, _ = _run("inspect", str(chain_file))
    lines = out.splitlines()
    assert code == 0 and lines[0].startswith("chain: 27 messages, 1 sections,")
    assert "section 0:" in lines[1] and "human" in lines[1]
    assert sum(1 for line in lines if line.strip().startswith("pair ")) == 13
    assert "request_response, 2 messages" in lines[2] and "completion, 1 messages" in lines[-1]


def test_inspect_json_sizes_add_up(chain_file):
    report = json.loads(_run("inspect", str(chain_file), "--json")[1])
    section = report["sections"][0]
    pairs_bytes = sum(p["bytes"] for p in section["pairs"])
    assert section["bytes"] == section["system_bytes"] + section["human_bytes"] + pairs_bytes
    assert report["bytes"] == sum(s["bytes"] for s in report["sections"])


def test_tokens_reports_per_message_and_total_with_the_encoding(chain_file):
    report = json.loads(_run("tokens", str(chain_file), "--model", "gpt-4o", "--json")[1])
    assert report["encoding"] == "o200k_base" and report["estimate"] is False
    assert report["tokens"] == sum(report["messages"]) + 3 and len(report["messages"]) == 27
    code, out, _ = _run("tokens", str(chain_file), "--model", "claude-sonnet-4")
    assert code == 0 and "estimated tokens (cl100k_base" in out


def test_the_module_entry_point_runs(chain_file):
    done = subprocess.run([sys.executable, "-m", "summarizer", "tokens", str(chain_file)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "total:" in done.stdout
    bad = subprocess.run([sys.executable, "-m", "summarizer", "inspect", "/no/such.json"], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and bad.stderr.strip() == "error: input file not found: /no/such.json"


class _FakeLLM(BaseHTTPRequestHandler):
    """A scripted OpenAI-compatible server: answers, fails, or returns nothing, as the test asks."""

    mode = "ok"
    requests: list[dict] = []

    def do_POST(self):  # noqa: N802 (http.server naming)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
        if self.mode == "error":
            self._send(503, {"error": {"message": "overloaded"}})
        elif self.mode == "empty":
            self._send(200, {"choices": [{"message": {"content": ""}}]})
        else:
            self._send(200, {"choices": [{"message": {"content": "ports 1000-1011 open on 10.10.5.23"}}]})

    def _send(self, status, payload):
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def llm_server():
    _FakeLLM.mode, _FakeLLM.requests = "ok", []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeLLM)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_the_openai_backend_posts_chat_completions(llm_server):
    summarize = openai_summarizer({"LLM_SERVER_URL": llm_server, "LLM_SERVER_MODEL": "local-model",
                                   "OPENAI_API_KEY": "sk-test"})
    assert summarize("condense this") == "ports 1000-1011 open on 10.10.5.23"
    (request,) = _FakeLLM.requests
    assert request["path"] == "/v1/chat/completions" and request["auth"] == "Bearer sk-test"
    assert request["body"]["model"] == "local-model"
    assert [m["role"] for m in request["body"]["messages"]] == ["system", "user"]
    # the app's summary prompt, from the one place it is written (summarizer.passes.prompts)
    assert request["body"]["messages"][0]["content"] == SUMMARY_SYSTEM_PROMPT


def test_cli_summarize_with_the_openai_backend(llm_server, chain_file, monkeypatch):
    monkeypatch.setenv("LLM_SERVER_URL", llm_server)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    code, out, _ = _run("summarize", "--profile", "restore", "--input", str(chain_file), "--backend", "openai",
                        "--json")
    report = json.loads(out)
    assert code == 0 and report["calls"] == len(_FakeLLM.requests) >= 1
    assert any("ports 1000-1011 open on 10.10.5.23" in json.dumps(m) for m in report["messages"])


@pytest.mark.parametrize(("mode", "reason"), [("error", "HTTP 503"), ("empty", "empty summary")])
def test_backend_failures_are_clear_errors(llm_server, mode, reason):
    _FakeLLM.mode = mode
    with pytest.raises(BackendError, match=reason):
        openai_summarizer({"LLM_SERVER_URL": llm_server})("x")


def test_an_unreachable_server_is_named():
    with pytest.raises(BackendError, match="unreachable"):
        openai_summarizer({"LLM_SERVER_URL": "http://127.0.0.1:9/v1"}, timeout_seconds=2)("x")


def test_a_failed_summarization_exits_1_and_keeps_the_chain(llm_server, chain_file, monkeypatch):
    _FakeLLM.mode = "error"
    monkeypatch.setenv("LLM_SERVER_URL", llm_server)
    code, out, err = _run("summarize", "--profile", "restore", "--input", str(chain_file), "--backend", "openai",
                          "--json")
    assert code == 1 and "summarization failed" in err
    assert json.loads(out)["messages"] == _chain()


def test_the_openai_backend_needs_a_key_or_a_server(monkeypatch):
    with pytest.raises(CliError, match="OPENAI_API_KEY"):
        openai_summarizer({})


def _write(tmp_path: Path, messages: list[dict]) -> str:
    path = tmp_path / "chain.json"
    path.write_text(json.dumps(messages), encoding="utf-8")
    return str(path)


def test_inspect_and_summarize_both_repair_two_user_messages_in_a_row_and_say_so(tmp_path):
    path = _write(tmp_path, [{"role": "system", "content": "s"}, {"role": "user", "content": "a"},
                             {"role": "user", "content": "b"}, {"role": "assistant", "content": "ok"}])
    for argv in (("inspect", path), ("summarize", "--profile", "agent", "--input", path)):
        code, _, err = _run(*argv)
        assert code == 0 and "warning: repaired the chain (merged user messages 1-2 into one)" in err


def test_inspect_and_summarize_both_refuse_what_cannot_be_repaired(tmp_path):
    path = _write(tmp_path, [{"role": "assistant", "content": "a"}])
    for argv in (("inspect", path), ("summarize", "--profile", "agent", "--input", path)):
        code, out, err = _run(*argv)
        assert code == 2 and err.startswith("error: invalid chain:") and out == ""


def test_an_orphan_tool_result_is_repaired_by_both_with_the_reason(tmp_path):
    path = _write(tmp_path, [{"role": "user", "content": "x"}, {"role": "tool", "tool_call_id": "c1", "content": "y"}])
    for argv in (("inspect", path), ("summarize", "--profile", "agent", "--input", path)):
        code, _, err = _run(*argv)
        assert code == 0 and err.startswith("warning: repaired the chain (message 1:")


def test_a_well_formed_chain_gets_no_warning(chain_file):
    assert _run("inspect", str(chain_file))[2] == ""
