"""Management commands: import_chain / export_chain round-trip, create_api_token, import_settings_env."""
from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from flows.config import settings_for
from flows.models import ApiToken, Chain, Flow, Message, hash_token
from summarizer import import_chain
from summarizer.formats.convert import TRANSCRIPT_FORMATS
from tests.conftest import corpus_params, load_corpus
from tests.summarizer.test_formats_anthropic import REQUEST as ANTHROPIC_REQUEST
from tests.summarizer.test_formats_responses import REQUEST as RESPONSES_REQUEST

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


@pytest.mark.parametrize("path", corpus_params())
def test_every_corpus_file_imports_via_the_cli_and_exports_back_equal(path, staff_user, tmp_path):
    assert "imported" in run("import_chain", str(path))
    chain = Chain.objects.get()
    for fmt in TRANSCRIPT_FORMATS:
        target = tmp_path / f"out.{fmt}"
        run("export_chain", str(chain.pk), "--format", fmt, "--output", str(target))
        assert import_chain(target.read_bytes(), fmt) == load_corpus(path), fmt


@pytest.mark.parametrize("fmt, conversation, extra", [
    ("anthropic", ANTHROPIC_REQUEST, {"model": "claude-sonnet-4-6", "max_tokens": 1024, "stream": True}),
    ("responses", RESPONSES_REQUEST, {"model": "gpt-5.4", "store": False, "include": ["reasoning.encrypted_content"]}),
])
def test_a_wire_request_imports_via_the_cli_and_its_chain_exports_the_agents_exact_blocks(
        fmt, conversation, extra, staff_user, tmp_path):
    path = tmp_path / "request.json"
    path.write_text(json.dumps({**extra, **conversation}))
    assert "imported" in run("import_chain", str(path), "--format", fmt)
    target = tmp_path / "out.json"
    run("export_chain", str(Chain.objects.get().pk), "--format", fmt, "--output", str(target))
    assert json.loads(target.read_text()) == conversation  # through Message rows, thinking signatures included


def test_import_chain_refuses_a_broken_file_and_writes_nothing(user, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type":"session"}\n{"type": "message", "message": {"role": "user", "content": "q"}}\n{x\n')
    with pytest.raises(CommandError, match="line 3"):
        run("import_chain", str(bad), "--owner", "alice")
    with pytest.raises(CommandError, match="cannot read"):
        run("import_chain", str(tmp_path / "missing.json"), "--owner", "alice")
    assert (Flow.objects.count(), Message.objects.count()) == (0, 0)


def test_import_chain_needs_a_known_owner(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps([{"role": "user", "content": "q"}]))
    with pytest.raises(CommandError, match="no user"):
        run("import_chain", str(path), "--owner", "nobody")


def test_export_chain_prints_to_stdout_and_refuses_unknown_chains(make_chain, tool_round):
    chain = make_chain(messages=tool_round)
    assert json.loads(run("export_chain", str(chain.pk))) == tool_round
    with pytest.raises(CommandError):
        run("export_chain", "999999")


def test_create_api_token_prints_a_working_token_once(user):
    raw = run("create_api_token", "alice", "--name", "ci").strip()
    token = ApiToken.objects.get()
    assert token.key_hash == hash_token(raw) and token.name == "ci"
    with pytest.raises(CommandError):
        run("create_api_token", "nobody")


def test_import_settings_env_reads_a_dotenv_file(tmp_path):
    env = tmp_path / ".env"
    env.write_text("# PentAGI\nSUMMARIZER_LAST_SEC_BYTES=40000\nexport ASSISTANT_SUMMARIZER_KEEP_QA_SECTIONS=2\n")
    out = run("import_settings_env", "--file", str(env))
    assert "last_sec_bytes=40000" in out
    assert settings_for(profile="agent").last_sec_bytes == 40000
    assert settings_for(profile="assistant").keep_qa_sections == 2


def test_import_settings_env_saves_the_good_variables_and_names_each_bad_one(tmp_path):
    """One bad variable no longer throws the whole profile away (issue 13 item 4)."""
    env = tmp_path / ".env"
    env.write_text("SUMMARIZER_LAST_SEC_BYTES=30000\nSUMMARIZER_KEEP_QA_SECTIONS=12\nSUMMARIZER_MAX_QA_SECTIONS=many\n")
    out, errors = io.StringIO(), io.StringIO()
    with pytest.raises(CommandError, match="2 variable"):
        call_command("import_settings_env", "--file", str(env), stdout=out, stderr=errors)
    assert "last_sec_bytes=30000" in out.getvalue()
    err = errors.getvalue()
    assert "SUMMARIZER_KEEP_QA_SECTIONS='12': cannot exceed" in err and "SUMMARIZER_MAX_QA_SECTIONS='many'" in err
    row = settings_for(profile="agent")
    assert (row.last_sec_bytes, row.keep_qa_sections, row.max_qa_sections) == (30000, 1, 10)
