"""The extractive summary as a briefing: sections, outcomes, typed findings, merging, noise, invariants."""
from __future__ import annotations

import json
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from summarizer.compact.prompt import build_compaction_prompt
from summarizer.extractive.briefing import extractive_summarize
from summarizer.extractive.facts import clip, finding_label, noise_identifiers, typed_findings
from summarizer.extractive.sections import BRIEFING_TITLES
from summarizer.identifiers import Finding, extract_identifiers, missing_identifiers
from summarizer.passes.prompts import build_summary_prompt

SUMMARY_TOOL = "execute_task_and_return_summary"


def _call(call_id: str, command: str, name: str = "terminal") -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps({"cmd": command})}}


def _ai(text: str | None, *calls: dict) -> dict:
    message: dict = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = list(calls)
    return message


def _tool(call_id: str, content: str) -> dict:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


TASK = {"role": "user", "content": "Get domain admin on 10.1.1.0/24 and report every credential."}
WORK = [
    _ai("Starting with SMB on the DC.", _call("c1", "nxc smb 10.1.1.5 -u guest -p ''"),
        _call("c2", "curl -s http://10.1.1.9/backup.zip -o /tmp/backup.zip")),
    _tool("c2", "curl: (22) The requested URL returned error: 404 Not Found"),
    _tool("c1", "SMB 10.1.1.5 445 DC01 [+] corp.local\\guest: (Guest)\nSMB 10.1.1.5 445 DC01 signing:True"),
    _ai("No backup archive found on the web server. The guest session works on DC01.",
        _call("c3", "GetUserSPNs.py corp.local/guest -request")),
    _tool("c3", "$krb5tgs$23$*svc_sql$CORP.LOCAL$corp.local/svc_sql*$a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6$"
                "0f1e2d3c4b5a69788796a5b4c3d2e1f0aabbccddeeff0011\n" + "".join(f"line {i}\n" for i in range(30))),
    _ai("Great finding: svc_sql is kerberoastable. Next I will crack the ticket with hashcat mode 13100. "
        "Then I will try the password on MSSQL at 10.1.1.7."),
]
PROMPT = build_summary_prompt([TASK], WORK)


def _titles(summary: str) -> list[str]:
    return [line for line in summary.splitlines() if line in BRIEFING_TITLES.values() or line.startswith("#")]


def _section(summary: str, title: str) -> str:
    body = summary.split(title + "\n", 1)[1]
    return body.split("\n\n", 1)[0]


def test_it_writes_the_briefing_sections_in_order():
    titles = _titles(extractive_summarize(PROMPT))
    assert titles == [BRIEFING_TITLES[g] for g in ("goal", "done", "critical", "blocked", "next")]


def test_each_action_is_one_line_with_its_outcome_even_when_answers_come_out_of_order():
    done = _section(extractive_summarize(PROMPT), BRIEFING_TITLES["done"])
    assert "nxc smb 10.1.1.5 -u guest -p '' → SMB 10.1.1.5 445 DC01 [+] corp.local\\guest: (Guest)" in done


def test_failed_actions_and_the_agents_dead_ends_are_negative_results():
    negative = _section(extractive_summarize(PROMPT), BRIEFING_TITLES["blocked"])
    assert "curl -s http://10.1.1.9/backup.zip -o /tmp/backup.zip → curl: (22)" in negative
    assert "No backup archive found on the web server." in negative


def test_the_goal_keeps_the_task_and_moves_to_the_current_step():
    goal = _section(extractive_summarize(PROMPT), BRIEFING_TITLES["goal"])
    assert "- Task: Get domain admin on 10.1.1.0/24" in goal
    assert "- Current step: Then I will try the password on MSSQL at 10.1.1.7." in goal
    nexts = _section(extractive_summarize(PROMPT), BRIEFING_TITLES["next"])
    assert "- Next I will crack the ticket with hashcat mode 13100." in nexts


def test_a_kerberos_ticket_is_typed_as_such_and_kept_in_its_case():
    findings = _section(extractive_summarize(PROMPT), BRIEFING_TITLES["critical"])
    ticket = "$krb5tgs$23$*svc_sql$CORP.LOCAL$corp.local/svc_sql*$a1b2"
    assert f"- Kerberos TGS ticket hash (kerberoast): {ticket}" in findings
    assert "A1B2C3D4E5F6A7B8C9D0E1F2A3B4C5D6" not in extractive_summarize(PROMPT)


def test_findings_are_typed_by_what_the_value_is_not_by_its_label():
    line = "password: aad3b435b51404eeaad3b435b51404ee"
    assert finding_label(Finding("password", "aad3b435b51404eeaad3b435b51404ee", line)) == "NT hash"
    assert typed_findings("Password: Winter2024!") == ["- password: Winter2024!"]
    assert typed_findings("[+] corp.local\\bob:5f4dcc3b5aa765d61d8327deb882cf99 (Pwn3d!)") == [
        "- NT hash login (pass-the-hash): corp.local\\bob:5f4dcc3b5aa765d61d8327deb882cf99"]
    assert typed_findings("cleartext password: **robb.stark : sexywolfy**") == [
        "- credential (user:password): robb.stark:sexywolfy"]


def test_a_summary_summarized_again_merges_into_one_set_of_sections():
    first = extractive_summarize(PROMPT)
    rolled = [_ai(None, {"id": "s1", "type": "function", "function": {"name": SUMMARY_TOOL, "arguments": "{}"}}),
              {"role": "tool", "tool_call_id": "s1", "content": first},
              _ai("Cracked it: svc_sql password is Summer2019. Next: psexec to 10.1.1.5.")]
    again = extractive_summarize(build_summary_prompt([{"role": "user", "content": "Use the new creds."}], rolled))
    counts = Counter(_titles(again))
    assert counts and max(counts.values()) == 1
    assert "- Task: Get domain admin on 10.1.1.0/24" in again  # the original task is still the task
    assert "- Latest ask: Use the new creds." in again
    assert "Earlier summaries" not in again and "- Requests:" not in again


def test_the_older_nested_layout_is_flattened_too():
    legacy = ("Earlier summaries:\n- Requests:\n- Requests:\n- scan 10.9.9.9\n\nActions and results:\n"
              "- terminal: nmap 10.9.9.9\n  > 445/tcp open microsoft-ds")
    prompt = build_summary_prompt([], [_ai("**summarized content:**\n" + legacy), _ai("Next: enum4linux 10.9.9.9")])
    summary = extractive_summarize(prompt)
    assert "Requests:" not in summary and "Earlier summaries:" not in summary
    assert "445/tcp open microsoft-ds" in summary and "- Task: scan 10.9.9.9" in summary


def test_identifier_noise_is_left_out_of_a_pentagi_summary_but_not_what_the_agent_used():
    dump = "".join(f"{i * 16:08x}: 4142 4344  ABCD\n" for i in range(5)) + "S-1-5-21-3623811015-3361044348-30300820"
    work = [_ai(None, _call("c1", "xxd /tmp/blob.bin")), _tool("c1", dump),
            _ai("pip said see https://pip.pypa.io/warnings/venv",
                _call("c2", "cat /usr/lib/python3/dist-packages/x.py")),
            _tool("c2", "WARNING: see https://pip.pypa.io/warnings/venv and /usr/lib/python3.11/os.py")]
    summary = extractive_summarize(build_summary_prompt([TASK], work))
    listed = summary.split("\nIdentifiers: ", 1)[-1] if "\nIdentifiers: " in summary else ""
    for noise in ("00000010", "00000040", "3623811015", "/usr/lib/python3.11/os.py"):
        assert noise not in listed
    assert "/usr/lib/python3/dist-packages/x.py" in summary and "https://pip.pypa.io/warnings/venv" in summary
    assert "00000040" not in summary  # a hexdump line carries nothing worth quoting beyond the outcome


def test_a_listing_of_paths_is_noise_unless_the_agent_names_one():
    listing = "\n".join(f"/var/www/html/page{i}.php (Status: 200)" for i in range(40))
    assert noise_identifiers(["/var/www/html/page3.php", "/var/www/html/page7.php"], "open /var/www/html/page7.php",
                             [listing]) == {"/var/www/html/page3.php"}


def test_a_checkpoint_still_lists_noise_because_its_audit_counts_it():
    span = [TASK, _ai(None, _call("c1", "xxd /tmp/blob.bin")), _tool("c1", "00000010: 4142\n00000020: 4344")]
    summary = extractive_summarize(build_compaction_prompt(span))
    assert missing_identifiers(extract_identifiers(summary + "\n"), summary) == []
    assert "00000010" in summary and "00000020" in summary


def test_clipping_never_leaves_a_dangling_label():
    assert clip("the password: hunter2 was found on the share", 22) == "the password…"


_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=400)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(_TEXT, _TEXT, _TEXT), min_size=1, max_size=6), st.integers(200, 6000))
def test_briefings_are_deterministic_within_budget_and_never_repeat_a_heading(turns, budget):
    work = []
    for index, (note, command, output) in enumerate(turns):
        work += [_ai(note or None, _call(f"c{index}", command)), _tool(f"c{index}", output)]
    prompt = build_summary_prompt([TASK], work)
    summary = extractive_summarize(prompt, budget_bytes=budget)
    assert len(summary.encode()) <= budget
    assert summary == extractive_summarize(prompt, budget_bytes=budget)
    assert max(Counter(_titles(summary)).values(), default=1) == 1
    again = extractive_summarize(build_summary_prompt([TASK], [_ai("**summarized content:**\n" + summary)]),
                                 budget_bytes=budget)
    assert max(Counter(_titles(again)).values(), default=1) == 1


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(["10.0.0.7", "10.0.0.8:8443", "/etc/shadow", "CVE-2021-44228",
                                 "http://10.0.0.9/admin", "5f4dcc3b5aa765d61d8327deb882cf99"]), min_size=1))
def test_an_ample_budget_keeps_every_identifier_the_agent_saw(values):
    work = [_ai(None, _call("c1", "scan")), _tool("c1", "\n".join(f"found {v}" for v in values))]
    prompt = build_summary_prompt([TASK], work)
    summary = extractive_summarize(prompt, budget_bytes=20_000)
    assert missing_identifiers(extract_identifiers(prompt), summary) == []


def test_the_ledger_adds_what_a_model_forgot_and_nothing_when_it_forgot_nothing():
    from summarizer.extractive.ledger import LEDGER_TITLE, with_ledger

    forgetful = with_ledger(PROMPT, "The agent looked at SMB.")
    assert forgetful.startswith("The agent looked at SMB.\n\n" + LEDGER_TITLE)
    assert "- Kerberos TGS ticket hash (kerberoast): $krb5tgs$23$" in forgetful and "10.1.1.5" in forgetful
    assert with_ledger(PROMPT, forgetful) == forgetful  # complete now: appended once, deterministically
    checkpoint = build_compaction_prompt([TASK, *WORK])
    assert "\n## Ledger (audited findings and identifiers)\n" in with_ledger(checkpoint, "## Goal\nx")


def test_a_ledger_merges_into_findings_when_summarized_again():
    from summarizer.extractive.ledger import with_ledger

    rolled = [_ai("**summarized content:**\n" + with_ledger(PROMPT, "The agent looked at SMB.")), _ai("Next: crack.")]
    summary = extractive_summarize(build_summary_prompt([TASK], rolled))
    assert "Ledger" not in summary and "$krb5tgs$23$*svc_sql$" in _section(summary, BRIEFING_TITLES["critical"])


def test_the_current_step_of_an_earlier_summary_stands_until_something_newer_happens():
    earlier = extractive_summarize(PROMPT)
    only_summary = build_summary_prompt([], [_ai("**summarized content:**\n" + earlier)])
    assert "- Current step: Then I will try the password on MSSQL at 10.1.1.7." in extractive_summarize(only_summary)
    moved_on = build_summary_prompt([], [_ai("**summarized content:**\n" + earlier), _ai("Next: dump LSASS on DC01.")])
    assert "- Current step: Next: dump LSASS on DC01." in extractive_summarize(moved_on)


def test_a_dump_of_banner_hex_is_noise_but_hashes_in_findings_and_runs_the_agent_named_are_not():
    """Issue 23: ~150 banner hex strings filled the identifier list; more than LISTING_HEX_RUNS in one result are
    a dump, except a run inside a finding (a hash) or one the agent wrote itself."""
    import hashlib

    from summarizer.extractive.facts import LISTING_HEX_RUNS
    from summarizer.identifiers import extract_identifiers

    banners = [hashlib.sha1(str(i).encode()).hexdigest()[:24] for i in range(LISTING_HEX_RUNS + 5)]
    dump = "\n".join(f"{i}/tcp open svc banner {b}" for i, b in enumerate(banners))
    dump += "\nAdministrator:500:aad3b435b51404eeaad3b435b51404ee:31d6cfe0d16ae931b73c59d7e0c089c0:::"
    ids = extract_identifiers(dump)
    noise = noise_identifiers(ids, f"look at {banners[0]}", [dump])
    assert {b.upper() for b in banners[1:]} <= noise
    assert set(banners[1:]) <= noise_identifiers(banners, "", [dump])  # as the input spells them, too
    assert banners[0].upper() not in noise and "31D6CFE0D16AE931B73C59D7E0C089C0" not in noise
    assert noise_identifiers(extract_identifiers("\n".join(banners[:LISTING_HEX_RUNS])), "", [
        "\n".join(banners[:LISTING_HEX_RUNS])]) == set()
