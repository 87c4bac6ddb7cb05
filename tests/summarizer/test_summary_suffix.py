"""Acceptance facts 39-42 (OpenClaw's safeguard formatting and budgets) on our compaction summary's suffix.

The helpers are tested on their own (one test per fact or group, fact number in the docstring), then their
wiring: write_summary appends the suffix to the summary the model wrote and caps the whole.
"""
from __future__ import annotations

from summarizer.compact.summary_suffix import (
    MAX_FILE_OPS_SECTION_CHARS,
    PRESERVED_TURNS_HEADING,
    SUMMARY_TRUNCATED_MARKER,
    TOOL_FAILURES_HEADING,
    assemble_suffix,
    cap_compaction_summary,
    cap_preserving_suffix,
    collect_tool_failures,
    compute_file_lists,
    compute_file_operations,
    format_file_operations,
    format_preserved_turns_section,
    format_tool_failures_section,
    resolve_quality_guard_max_retries,
    resolve_recent_turns_preserve,
    split_preserved_recent_turns,
)
from summarizer.compact.summary_writer import SummaryOptions, write_summary
from summarizer.tokens.count import message_tokens
from tests.fakes import tool_call
from tests.summarizer.compact_fakes import Checkpoint


def _call(cid: str, name: str, **args: object) -> dict:
    return tool_call(cid, name, args)


def _calls(*calls: dict, content: str | None = None) -> dict:
    return {"role": "assistant", "content": content, "tool_calls": list(calls)}


def _failed(cid: str, text: str, **details: object) -> dict:
    return {"role": "tool", "tool_call_id": cid, "name": "exec", "content": text, "is_error": True,
            "details": details}


def _u(text: str) -> dict:
    return {"role": "user", "content": text}


def _a(text: str) -> dict:
    return {"role": "assistant", "content": text}


# ------------------------------------------------------------------------------------------ fact 39

def test_fact_39_a_failed_exec_is_listed_with_its_status_and_exit_code():
    """Fact 39: exec with {status: failed, exitCode: 1} and "ENOENT: missing file" is formatted exactly."""
    section = format_tool_failures_section(collect_tool_failures(
        [_failed("c1", "ENOENT: missing file", status="failed", exitCode=1)]))
    assert section == f"\n\n{TOOL_FAILURES_HEADING}\n- exec (status=failed exitCode=1): ENOENT: missing file"


def test_fact_39_a_duplicate_call_id_counts_once_and_empty_output_says_failed():
    """Fact 39: a repeated toolCallId is listed once; empty content with exitCode 2 → "exec (exitCode=2): failed"."""
    failures = collect_tool_failures([_failed("c1", "ENOENT: missing file", status="failed", exitCode=1),
                                      _failed("c1", "second copy", status="failed", exitCode=1),
                                      _failed("c2", "", exitCode=2)])
    section = format_tool_failures_section(failures)
    assert [f.tool_call_id for f in failures] == ["c1", "c2"]
    assert "- exec (exitCode=2): failed" in section and "second copy" not in section


def test_fact_39_nine_failures_show_eight_and_one_more_none_shows_nothing():
    """Fact 39: 9 failures → 8 lines then "...and 1 more"; no failures → ""."""
    failures = collect_tool_failures([_failed(f"c{i}", f"boom {i}", exitCode=1) for i in range(9)])
    section = format_tool_failures_section(failures)
    assert section.endswith("- ...and 1 more") and "boom 7" in section and "boom 8" not in section
    assert format_tool_failures_section(collect_tool_failures([_u("hi"), _a("ok")])) == ""


def test_fact_39_failures_are_recognised_in_our_message_format():
    """Fact 39 (mapping): a non-zero exitCode in `details` marks a failure without an error flag; a successful
    result does not; the tool name comes from the assistant's call when the result has none."""
    messages = [_calls(_call("c1", "terminal", command="ls /nope")),
                {"role": "tool", "tool_call_id": "c1", "content": "ls: cannot access", "details": {"exitCode": 2}},
                _calls(_call("c2", "terminal", command="id")),
                {"role": "tool", "tool_call_id": "c2", "content": "uid=0(root)", "details": {"exitCode": 0}}]
    section = format_tool_failures_section(collect_tool_failures(messages))
    assert section.endswith("- terminal (exitCode=2): ls: cannot access") and "uid=0" not in section


# ------------------------------------------------------------------------------------------ fact 40

def test_fact_40_long_file_lists_are_capped_with_a_count():
    """Fact 40: 200 read + 200 modified files → both tags, "...and ", the section ≤ 2,000 chars."""
    read = [f"/srv/app/src/module_{i:03d}/reader.py" for i in range(200)]
    modified = [f"/srv/app/src/module_{i:03d}/writer.py" for i in range(200)]
    section = format_file_operations(read, modified)
    assert "<read-files>" in section and "<modified-files>" in section and "...and " in section
    assert len(section) <= MAX_FILE_OPS_SECTION_CHARS
    assert format_file_operations([], []) == ""


def test_fact_40_reads_and_writes_come_from_tool_calls_with_paths():
    """Fact 40 (mapping): file tools and shell commands give the lists; a modified file is not also "read"."""
    messages = [_calls(_call("1", "read_file", path="/etc/passwd"),
                       _call("2", "write_file", path="/tmp/notes.md", content="x"),
                       _call("3", "edit", file_path="/srv/app/config.py", old="a", new="b"),
                       _call("4", "str_replace_based_edit_tool", command="view", path="/srv/app/main.py"),
                       _call("5", "terminal", command="cat /etc/hosts && sed -n 1,5p /var/log/auth.log"),
                       _call("6", "terminal", command="sed -i 's/a/b/' /srv/app/config.py; echo hi > /tmp/out.txt"),
                       _call("7", "terminal", command="curl -s http://10.0.0.5/index.php > /dev/null"),
                       _call("8", "read_file", path="/tmp/notes.md"))]
    read, modified = compute_file_lists(compute_file_operations(messages))
    assert read == ["/etc/hosts", "/etc/passwd", "/srv/app/main.py", "/var/log/auth.log"]
    assert modified == ["/srv/app/config.py", "/tmp/notes.md", "/tmp/out.txt"]


# ------------------------------------------------------------------------------------------ fact 41

def test_fact_41_a_long_body_is_capped_with_the_marker():
    """Fact 41: a 16,500-char body is capped to ≤ 16,000 chars and ends with the truncation marker."""
    capped = cap_compaction_summary("x" * 16_500)
    assert len(capped) <= 16_000 and capped.endswith(SUMMARY_TRUNCATED_MARKER)
    assert cap_compaction_summary("hello", 10) == "hello"


def test_fact_41_the_suffix_is_kept_at_the_end():
    """Fact 41: the suffix (tool failures, read files) survives at the end when the body is cut."""
    suffix = assemble_suffix([format_tool_failures_section(collect_tool_failures([_failed("c", "boom", exitCode=1)])),
                              format_file_operations(["/etc/passwd"], [])])
    capped = cap_preserving_suffix("B" * 16_500, suffix)
    assert capped.endswith(suffix) and len(capped) <= 16_000 and SUMMARY_TRUNCATED_MARKER in capped
    assert cap_preserving_suffix("A" * 100, "TAIL", 10).endswith("TAIL")


def test_fact_41_a_suffix_over_the_cap_keeps_its_tail():
    """Fact 41: a suffix longer than the cap keeps its last sections (its tail)."""
    suffix = "S" * 15 + "END"
    assert cap_preserving_suffix("body", suffix, 10) == suffix[-10:]
    assert cap_preserving_suffix("abc", "", 2) == cap_compaction_summary("abc", 2)


def test_fact_41_a_body_without_a_trailing_newline_gets_a_blank_line_before_the_suffix():
    """Fact 41: the assembled suffix always starts with "\\n\\n", so it never runs into the body's last line."""
    suffix = assemble_suffix(["## Tool Failures\n- exec: boom"])
    assert ("## Exact identifiers\n- 10.0.0.5" + suffix).endswith("- 10.0.0.5\n\n## Tool Failures\n- exec: boom")
    assert assemble_suffix(["", ""]) == ""


def test_fact_41_a_tiny_budget_keeps_a_plain_prefix():
    """Fact 41: with a budget of 10 (smaller than the marker) the body prefix is kept, without a marker."""
    assert cap_compaction_summary("x" * 200, 10) == "x" * 10
    with_marker = cap_compaction_summary("x" * 200, len(SUMMARY_TRUNCATED_MARKER) + 10)
    assert with_marker == "x" * 10 + SUMMARY_TRUNCATED_MARKER


# ------------------------------------------------------------------------------------------ fact 42

def test_fact_42_one_recent_turn_is_preserved_with_its_heading():
    """Fact 42: recentTurnsPreserve=1 with [U, A, U, A] → 2 preserved, 2 summarizable, the heading shown."""
    messages = [_u("user-1"), _a("assistant-1"), _u("user-2"), _a("assistant-2")]
    summarizable, preserved = split_preserved_recent_turns(messages, 1)
    assert summarizable == messages[:2] and preserved == messages[2:]
    section = format_preserved_turns_section(preserved)
    assert section.startswith(f"\n\n{PRESERVED_TURNS_HEADING}\n") and "- User: user-2" in section


def test_fact_42_one_user_and_eight_assistants_keep_the_user_and_the_last_five():
    """Fact 42: one user + 8 assistants with N=3 → 6 preserved: the user and assistants 4-8."""
    messages = [_u("user-1"), *(_a(f"assistant-{i}") for i in range(1, 9))]
    summarizable, preserved = split_preserved_recent_turns(messages, 3)
    texts = [m["content"] for m in preserved]
    assert len(preserved) == 6 and texts[0] == "user-1" and "assistant-8" in texts and "assistant-2" not in texts
    assert [m["content"] for m in summarizable] == ["assistant-1", "assistant-2", "assistant-3"]


def test_fact_42_a_preserved_call_keeps_its_results():
    """Fact 42: the results of a preserved assistant's tool calls are preserved with it, never orphaned."""
    messages = [_u("old task"), _a("done"), _u("scan it"), _calls(_call("c9", "terminal", command="nmap x")),
                {"role": "tool", "tool_call_id": "c9", "content": "22/tcp open"}, _a("port 22 is open")]
    summarizable, preserved = split_preserved_recent_turns(messages, 1)
    assert summarizable == messages[:2] and preserved == messages[2:]
    assert "- Tool result (terminal): 22/tcp open" in format_preserved_turns_section(preserved)


def test_fact_42_clamps():
    """Fact 42: recent turns undefined→3, -1→0, 99→12; quality-guard retries undefined→1, -1→0, 99→3."""
    assert [resolve_recent_turns_preserve(v) for v in (None, -1, 99, 2.9)] == [3, 0, 12, 2]
    assert [resolve_quality_guard_max_retries(v) for v in (None, -1, 99, 2.7)] == [1, 0, 3, 2]


def test_fact_42_long_preserved_messages_are_cut_at_600_chars():
    """Fact 42: each quoted message is at most 600 chars plus "..."."""
    section = format_preserved_turns_section([_u("y" * 1_000)])
    assert "- User: " + "y" * 600 + "..." in section and "y" * 601 not in section


# ------------------------------------------------------------------------------------------ wiring

def _measure(message: dict) -> int:
    return message_tokens(message)


def test_the_summary_ends_with_the_failures_and_file_lists_of_the_compacted_span():
    """Facts 39-41 wired: write_summary appends the suffix after the model's checkpoint, which still passes."""
    span = [_u("Find the web root config on 10.0.0.5"),
            _calls(_call("c1", "read_file", path="/var/www/html/config.php")),
            {"role": "tool", "tool_call_id": "c1", "content": "<?php $db_pass='s3cret';"},
            _calls(_call("c2", "exec", command="cat /root/flag.txt")),
            _failed("c2", "cat: /root/flag.txt: Permission denied", status="failed", exitCode=1),
            _a("Need root for the flag.")]
    outcome = write_summary(span, summarize=Checkpoint(), opts=SummaryOptions(), measure=_measure)
    assert outcome.error is None, outcome.audit
    text = outcome.text or ""
    assert text.index("## Critical context") < text.index(TOOL_FAILURES_HEADING) < text.index("<read-files>")
    assert "- exec (status=failed exitCode=1): cat: /root/flag.txt: Permission denied" in text
    assert "/var/www/html/config.php" in text.split("<read-files>", 1)[1]


def test_recent_turns_are_quoted_and_left_out_of_the_summarizer_input_when_asked():
    """Fact 42 wired: with recent_turns_preserve the newest turn is quoted verbatim, not summarized."""
    span = [_u("Enumerate 10.0.0.5"), _a("Found SSH on 10.0.0.5:22"), _u("Now try the web port"), _a("Port 80 is up")]
    fake = Checkpoint()
    outcome = write_summary(span, summarize=fake, opts=SummaryOptions(recent_turns_preserve=1), measure=_measure)
    assert outcome.error is None, outcome.audit
    assert f"{PRESERVED_TURNS_HEADING}\n- User: Now try the web port\n- Assistant: Port 80 is up" in outcome.text
    assert "Port 80 is up" not in fake.prompts[0].split("<conversation>", 1)[1]


def test_the_audit_retries_follow_the_quality_guard_setting():
    """Fact 42 wired: quality_guard_max_retries 0 → one attempt; 3 → four attempts, then fail closed."""
    span = [_u("Check the lab host"), _a("Host 10.0.0.5 has the hash DEADBEEFCAFE0001")]
    for retries, calls in ((0, 1), (3, 4)):
        fake = Checkpoint(drop_identifiers=True)
        outcome = write_summary(span, summarize=fake, measure=_measure,
                                opts=SummaryOptions(quality_guard_max_retries=retries))
        assert outcome.text is None and fake.calls == calls and "summary audit failed" in (outcome.error or "")
