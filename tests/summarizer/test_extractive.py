"""The offline extractive summarizer: what it keeps, its byte budget, both prompt layouts."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from summarizer.compact.audit import audit_summary
from summarizer.compact.prompt import REQUIRED_HEADINGS, build_compaction_prompt
from summarizer.extractive.briefing import extractive_summarize, make_extractive
from summarizer.identifiers import extract_identifiers, missing_identifiers
from summarizer.passes.prompts import INSTRUCTIONS_WITH_TASKS, build_summary_prompt
from tests.conftest import corpus_params, load_corpus
from tests.fakes import tool_call


def _call(call_id: str, name: str, **args: str) -> dict:
    return tool_call(call_id, name, args)


def _assistant(*calls: dict, content: str | None = None) -> dict:
    return {"role": "assistant", "content": content, "tool_calls": list(calls)}


def _tool(call_id: str, content: str) -> dict:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


NMAP = ("Starting Nmap 7.94\nNmap scan report for 10.10.5.23\nPORT     STATE SERVICE VERSION\n"
        "22/tcp   open  ssh     OpenSSH 8.2p1 Ubuntu\n80/tcp   open  http    Apache httpd 2.4.41\n"
        "3306/tcp closed mysql\n" + "".join(f"filler line {i} nothing to see\n" for i in range(40)))
HUMAN = {"role": "user", "content": "Assess 10.10.5.23 (acme-web01) and report what is exposed."}
AIS = [
    _assistant(_call("call_1", "terminal", input="nmap -sV -p- 10.10.5.23"), content="Starting with a port scan."),
    _tool("call_1", NMAP),
    _assistant(_call("call_2", "terminal", input="curl -s http://10.10.5.23/admin/config.php")),
    _tool("call_2", "Error: 403 Forbidden\n<html>denied</html>"),
    _assistant(_call("call_3", "terminal", input="hydra -l root -P /usr/share/wordlists/rockyou.txt ssh://10.10.5.23")),
    _tool("call_3", "[22][ssh] host: 10.10.5.23   login: root   password: toor\n1 of 1 target successfully completed"),
    {"role": "assistant", "content": "SSH root login works with root:toor; next I will enumerate sudo rights."},
]
PENTAGI_PROMPT = build_summary_prompt([HUMAN], AIS)


def test_it_keeps_tools_key_arguments_and_key_results():
    summary = extractive_summarize(PENTAGI_PROMPT)
    assert "terminal: nmap -sV -p- 10.10.5.23" in summary
    assert "22/tcp open ssh OpenSSH 8.2p1 Ubuntu" in summary
    assert "Error: 403 Forbidden" in summary
    assert "root:toor" in summary
    assert "Assess 10.10.5.23 (acme-web01)" in summary


def test_every_identifier_of_the_input_survives_an_ample_budget():
    summary = extractive_summarize(PENTAGI_PROMPT, budget_bytes=8192)
    assert missing_identifiers(extract_identifiers(PENTAGI_PROMPT), summary) == []


def test_it_prefers_findings_over_filler_when_the_budget_is_tight():
    summary = extractive_summarize(PENTAGI_PROMPT, budget_bytes=700)
    assert "root:toor" in summary
    assert "filler line 30" not in summary
    assert len(summary.encode()) <= 700


def test_it_never_echoes_the_instructions_or_the_markup():
    summary = extractive_summarize(PENTAGI_PROMPT)
    assert INSTRUCTIONS_WITH_TASKS[:40] not in summary
    assert "<message" not in summary and "<tool_call" not in summary and "<tasks>" not in summary


def test_an_earlier_summary_pair_rolls_forward_with_priority():
    earlier = [
        {"role": "assistant", "content": None, "tool_calls": [_call("call_s", "execute_task_and_return_summary",
                                                                     question="delegate")]},
        _tool("call_s", "Earlier: mysql creds dbadmin:S3cret! worked on 10.10.5.24:3306; "
              "flag stored in /root/proof.txt"),
    ]
    noisy = [_assistant(_call("call_n", "terminal", input="ls -R /")),
             _tool("call_n", "\n".join(f"/var/lib/file{i}.dat" for i in range(300)))]
    prompt = build_summary_prompt([HUMAN], earlier + noisy)
    summary = extractive_summarize(prompt, budget_bytes=1500)
    assert "Earlier: mysql creds dbadmin:S3cret! worked on 10.10.5.24:3306" in summary
    assert "delegate" not in summary  # the fake call's question is plumbing, not content


def test_prefixed_completion_summaries_are_kept_without_the_prefix():
    prompt = build_summary_prompt([], [{"role": "assistant", "content": "**summarized content:**\nVPN is up on tun0."}])
    summary = extractive_summarize(prompt)
    assert "VPN is up on tun0." in summary and "**summarized content:**" not in summary


def test_tasks_only_prompts_keep_the_requests():
    prompt = build_summary_prompt([HUMAN, {"role": "user", "content": "Also check https://acme.example/login"}], [])
    summary = extractive_summarize(prompt)
    assert "Assess 10.10.5.23" in summary and "https://acme.example/login" in summary


CONVERSATION = [
    {"role": "system", "content": "You are a pentest agent. Never attack 10.10.5.1. Only use the lab VPN."},
    HUMAN, *AIS,
    {"role": "user", "content": "Now check whether the MySQL service allows remote root login."},
    _assistant(_call("call_4", "terminal", input="mysql -h 10.10.5.23 -u root -ptoor")),
    _tool("call_4", "ERROR 1130 (HY000): Host '10.10.5.99' is not allowed to connect"),
]


def test_compaction_prompts_get_the_requested_checkpoint_headings():
    summary = extractive_summarize(build_compaction_prompt(CONVERSATION))
    result = audit_summary(summary, identifiers=extract_identifiers(build_compaction_prompt(CONVERSATION)),
                           latest_ask=CONVERSATION[9]["content"])
    assert result.ok, result.problems
    headings = [line for line in summary.splitlines() if line.startswith("#")]
    assert headings[:len(REQUIRED_HEADINGS)] != [] and all(h in headings for h in REQUIRED_HEADINGS)
    assert headings[-1] == "## Exact identifiers"


def test_checkpoint_sections_hold_the_matching_content():
    summary = extractive_summarize(build_compaction_prompt(CONVERSATION))
    section = {h: body for h, body in _sections(summary).items()}
    assert "Never attack 10.10.5.1" in section["## Constraints & preferences"]
    assert "MySQL service allows remote root login" in section["## Goal"]
    assert "mysql -h 10.10.5.23" in section["### In progress"]
    assert "ERROR 1130" in section["### Blocked"]
    assert "root:toor" in section["## Critical context"]
    assert "10.10.5.99" in summary and "filler line 30" not in summary
    assert section["## Exact identifiers"] == "All quoted above.\n"  # only what no line above quotes is listed


def _sections(summary: str) -> dict[str, str]:
    sections: dict[str, str] = {}
    current = ""
    for line in summary.splitlines():
        if line.startswith("#"):
            current = line
            sections[current] = ""
        elif current:
            sections[current] += line + "\n"
    return sections


def test_a_previous_checkpoint_is_merged_under_its_own_headings():
    previous = "## Goal\nRoot acme-web01\n## Key decisions\n- Use SSH keys over passwords\n## Critical context\n- x"
    summary = extractive_summarize(build_compaction_prompt(CONVERSATION[:3], previous_summary=previous))
    sections = _sections(summary)
    assert "Root acme-web01" in sections["## Goal"]
    assert "Use SSH keys over passwords" in sections["## Key decisions"]


def test_identifiers_named_by_a_retry_are_listed():
    prompt = build_compaction_prompt(CONVERSATION[:2], missing=["DEADBEEF00112233"])
    assert "DEADBEEF00112233" in extractive_summarize(prompt)


def test_generic_text_is_summarized_too():
    text = "random preamble\n" * 50 + "the admin panel at http://10.0.0.7:8080/manager is open\n" + "noise\n" * 50
    summary = extractive_summarize(text, budget_bytes=400)
    assert "http://10.0.0.7:8080/manager is open" in summary


def test_too_many_identifiers_for_the_budget_are_counted_not_dropped_silently():
    text = " ".join(f"10.1.{i // 250}.{i % 250}" for i in range(400))
    summary = extractive_summarize(text, budget_bytes=300)
    assert "more identifiers omitted for space" in summary and len(summary.encode()) <= 300


def test_empty_input_says_so():
    assert extractive_summarize("") == "No content to summarize."


def test_make_extractive_binds_the_budget():
    summarize = make_extractive(500)
    assert summarize(PENTAGI_PROMPT) == extractive_summarize(PENTAGI_PROMPT, budget_bytes=500)
    with pytest.raises(ValueError):
        make_extractive(0)


@given(st.text(max_size=2000), st.integers(min_value=1, max_value=3000))
def test_the_budget_is_never_exceeded_and_output_is_deterministic(text, budget):
    summary = extractive_summarize(text, budget_bytes=budget)
    assert len(summary.encode("utf-8")) <= budget
    assert summary == extractive_summarize(text, budget_bytes=budget)


@given(st.lists(st.sampled_from(["é", "💥", "漢", "a", "\n", " open ", "10.0.0.1"]), max_size=400),
       st.integers(min_value=1, max_value=200))
def test_multibyte_text_is_cut_on_character_boundaries(chars, budget):
    summary = extractive_summarize("".join(chars), budget_bytes=budget)
    assert len(summary.encode("utf-8")) <= budget  # encode() would raise on a broken character


@pytest.mark.parametrize("path", corpus_params())
@pytest.mark.parametrize("budget", [2048, 8192])
def test_real_transcripts_stay_within_budget_with_all_headings(path, budget):
    messages = load_corpus(path)
    pentagi = build_summary_prompt([m for m in messages if m["role"] == "user"],
                                   [m for m in messages if m["role"] in ("assistant", "tool")])
    assert len(extractive_summarize(pentagi, budget_bytes=budget).encode()) <= budget
    checkpoint = extractive_summarize(build_compaction_prompt(messages[1:]), budget_bytes=budget)
    assert len(checkpoint.encode()) <= budget
    assert audit_summary(checkpoint, identifier_policy="off").ok
