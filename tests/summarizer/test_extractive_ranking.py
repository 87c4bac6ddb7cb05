"""What the briefing keeps when space is short: intents are not findings, dead ends in the agent's words, usage
errors are failures, one copy of a cut line, lines that quote listed identifiers, and the line scans it reuses."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from summarizer.compact.prompt import build_compaction_prompt, build_split_turn_prompt
from summarizer.compact.summary_writer import SPLIT_TURN_SEPARATOR, SummaryOptions, write_summary
from summarizer.extractive.briefing import extractive_summarize
from summarizer.extractive.facts import is_negative, is_strong, terms_of, typed_findings
from summarizer.extractive.sections import BRIEFING_TITLES
from summarizer.identifiers import (
    _FINDING_PATTERNS,
    _IDENTIFIER_RE,
    _LINE_CAP_CHARS,
    Finding,
    _finding_value,
    _values,
    extract_findings,
    extract_identifiers,
    is_case_insensitive_id,
)
from summarizer.passes.prompts import build_summary_prompt
from summarizer.tokens.count import message_tokens
from tests.summarizer.test_extractive_briefing import _ai, _call, _tool

TASK = {"role": "user", "content": "Enumerate corp.local from 10.2.2.0/24 and report what works."}


def _section(summary: str, group: str) -> str:
    title = BRIEFING_TITLES[group] + "\n"
    return summary.split(title, 1)[1].split("\n\n", 1)[0] if title in summary else ""


def test_the_steps_of_an_announced_plan_are_intents_not_findings():
    work = [_ai("Got a kerberoastable hash for svc_web! Let me:\n1. Crack the svc_web Kerberoast hash\n"
                "2. Check for domain trusts", _call("c1", "hashcat -m 13100 /tmp/h.txt")),
            _tool("c1", "Status: Exhausted"),
            _ai("Now let me:\n1. Spray the cracked password\n2. Dump LSASS on 10.2.2.5")]
    summary = extractive_summarize(build_summary_prompt([TASK], work))
    findings = _section(summary, "critical")
    assert "Got a kerberoastable hash for svc_web!" in findings
    assert "Crack the svc_web Kerberoast hash" not in summary  # an intent of its time, gone once acted on
    assert "- Spray the cracked password" in _section(summary, "next")  # the newest plan is the next step
    assert "- Current step: Dump LSASS on 10.2.2.5" in _section(summary, "goal")  # its last step is the current one
    assert "- 1." not in summary and "- 2." not in summary


def test_a_plan_sentence_that_ends_in_a_colon_is_still_the_next_step():
    work = [_ai("The trust is between separate forests, so direct cross-forest access is limited. "
                "Let me try MSSQL commands and check for gMSA:")]
    summary = extractive_summarize(build_summary_prompt([TASK], work))
    assert "Let me try MSSQL commands and check for gMSA:" in summary
    assert "- The trust is between separate forests, so direct cross-forest access is limited." in _section(
        summary, "blocked")


def test_the_agents_terse_dead_ends_are_negative_results():
    assert is_negative("No WinRM for any account.")
    assert is_negative("Direct access is limited to the DMZ.")
    assert is_negative("SMB signing was disabled on the relay target.")
    assert not is_negative("Nothing stops us now: we got Domain Admin.")  # a win, even with "nothing" in it
    summary = extractive_summarize(build_summary_prompt([TASK], [_ai("No WinRM for any account. Next: RDP.")]))
    assert "- No WinRM for any account." in _section(summary, "blocked")


def test_a_usage_message_is_a_failure_whatever_option_names_it_lists():
    usage = ("usage: nxc smb [-h] [-u USERNAME] [-p PASSWORD] [-H HASH] [--shares]\n"
             "nxc smb: error: unrecognized arguments: --spider-all")
    assert not is_strong("[-p PASSWORD] [-H HASH] [--kerberoasting OUTPUT]")
    assert is_strong("[+] corp.local\\bob:Winter2024 (Pwn3d!)")
    work = [_ai(None, _call("c1", "nxc smb 10.2.2.5 --spider-all")), _tool("c1", usage)]
    blocked = _section(extractive_summarize(build_summary_prompt([TASK], work)), "blocked")
    assert "nxc smb 10.2.2.5 --spider-all → nxc smb: error: unrecognized arguments: --spider-all" in blocked


def test_a_line_an_earlier_summary_cut_short_is_kept_once_in_full():
    ticket = "$krb5tgs$23$*svc$CORP.LOCAL$corp.local/svc*$" + "ab" * 70
    cut = f"- Kerberos TGS ticket hash (kerberoast): {ticket[:90]}…"
    earlier = f"**summarized content:**\nFindings:\n{cut}\n- Kerberos TGS ticket hash (kerberoast): {ticket[:120]}…"
    work = [_ai(earlier), _ai(None, _call("c1", "GetUserSPNs.py corp.local/bob")), _tool("c1", ticket)]
    findings = _section(extractive_summarize(build_summary_prompt([TASK], work)), "critical")
    assert findings.count("Kerberos TGS ticket hash") == 1
    assert ticket[:140] in findings


def test_a_pair_shown_with_its_domain_is_not_repeated_without_it():
    assert typed_findings("[+] corp.local\\bob:Winter2024\nnxc smb 10.2.2.5 -u bob -p Winter2024") == [
        "- credential (user:password): corp.local\\bob:Winter2024"]


def test_word_lists_and_shell_continuations_are_not_credentials():
    assert extract_findings("nxc smb 10.2.2.5 -u users.txt -p /tmp/passwords.txt") == []
    assert extract_findings("nxc smb 10.2.2.5 -u ~/users -p ~/pw.lst") == []
    assert extract_findings("nxc smb 10.2.2.5 -u bob -p \\") == []
    assert [f.value for f in extract_findings("nxc smb 10.2.2.5 -u bob -p 'S3cret!'")] == ["bob:S3cret!"]


def test_camel_case_names_count_as_something_the_agent_can_refer_back_to():
    assert {"CertEnroll", "WinRM"} <= terms_of("CertEnroll share on BRAAVOS, no WinRM")
    listing = "\n".join([f"SMB 10.2.2.23 445 BRAAVOS share{i} READ" for i in range(12)]
                        + ["SMB 10.2.2.23 445 BRAAVOS CertEnroll READ"])
    work = [_ai(None, _call("c1", "nxc smb 10.2.2.23 --shares")), _tool("c1", listing),
            _ai("The CertEnroll share means AD CS runs there.", _call("c2", "certipy find"))]
    assert "SMB 10.2.2.23 445 BRAAVOS CertEnroll READ" in extractive_summarize(build_summary_prompt([TASK], work))


def test_a_checkpoint_line_that_quotes_listed_identifiers_costs_only_what_it_adds():
    hosts = [f"10.2.2.{i}" for i in range(10, 22)]
    work = [TASK, _ai(None, _call("c1", "nmap -p445 " + " ".join(hosts))),
            _tool("c1", "445/tcp open on " + " ".join(hosts)),
            _ai("SMB is open on all twelve hosts; signing is off on 10.2.2.12. Next: relay to 10.2.2.12.")]
    # At this size the list of the twelve hosts alone would leave no room for the action line that names them.
    summary = extractive_summarize(build_compaction_prompt(work, summary_budget_tokens=350))
    done = summary.split("### Done\n", 1)[1].split("\n\n", 1)[0]
    assert "nmap -p445 10.2.2.10 10.2.2.11" in done
    listed = summary.split("## Exact identifiers\n", 1)[1]
    assert all(host in summary for host in hosts) and "- 10.2.2.10\n" not in listed + "\n"


_LINES = st.lists(st.sampled_from([
    "10.0.0.5:445 open", "see /etc/passwd and /tmp/x.txt", "deadbeefcafe0001 at 0x80070005", "CVE-2021-44228",
    "http://10.0.0.9/a?b=c", "\\\\dc01\\SYSVOL\\x", "C:\\Windows\\Temp", "plain words only", "123456 items",
    "[+] corp\\bob:pw1", "-u alice -p 'Summer1'", "password: hunter2", "$krb5asrep$23$a@B:" + "cd" * 20,
    "flag{x}", "Administrator:500:" + "a" * 32 + ":" + "b" * 32 + ":::", "", "  ",
]), max_size=12)


def _findings_in_one_pass(text: str) -> list[Finding]:
    """extract_findings as it was before lines were cached and prefiltered: every pattern on every line."""
    found: dict[tuple[str, str], Finding] = {}
    ordered: list[tuple[int, tuple[str, str]]] = []
    offset = 0
    for line in text.splitlines(keepends=True):
        for kind, pattern in _FINDING_PATTERNS:
            for match in pattern.finditer(line):
                value = _finding_value(kind, match)
                if value is not None and (kind, value) not in found:
                    found[(kind, value)] = Finding(kind, value, line.strip()[:_LINE_CAP_CHARS])
                    ordered.append((offset + match.start(), (kind, value)))
        offset += len(line)
    return [found[key] for _, key in sorted(ordered, key=lambda item: item[0])]


@settings(max_examples=80, deadline=None)
@given(_LINES, st.sampled_from(["\n", "\n\n", " "]))
def test_scanning_line_by_line_finds_what_one_scan_of_the_whole_text_finds(lines, joiner):
    text = joiner.join(lines)
    whole: dict[str, str] = {}
    for match in _IDENTIFIER_RE.finditer(text):
        for value in _values(match):
            whole.setdefault(value.upper() if is_case_insensitive_id(value) else value, value)
    assert extract_identifiers(text) == list(whole.values())
    assert extract_identifiers(text, limit=2) == list(whole.values())[:2]
    assert extract_findings(text) == _findings_in_one_pass(text)


def test_what_the_agent_set_in_bold_outranks_its_plain_notes_when_merged_again():
    earlier = ("**summarized content:**\nFindings:\n- The share layout on the file server looks standard\n"
               "- **The DC has unconstrained delegation**")
    prompt = build_summary_prompt([], [_ai(earlier)])
    tight = extractive_summarize(prompt, budget_bytes=100)  # room for one of the two lines
    assert "**The DC has unconstrained delegation**" in tight and "share layout" not in tight


def test_a_split_turns_plans_and_rules_do_not_become_context_that_outlives_every_merge():
    task = {"role": "user", "content": "Get DA on corp.local. Never retry the same command more than twice."}
    prefix = [task, _ai("Kerberoasting worked. Let me:\n1. Crack the svc hash\n2. Check trusts",
                        _call("c1", "hashcat -m 13100 /tmp/h.txt")), _tool("c1", "svc_web:Summer2019")]
    context = extractive_summarize(build_split_turn_prompt(prefix)).split("## Context for the kept suffix", 1)[1]
    assert "Crack the svc hash" not in context and "Never retry" not in context
    assert "Kerberoasting worked." in context


def test_a_cracked_secret_the_agent_announces_is_a_typed_finding():
    assert typed_findings("John cracked another hash for north: `345ertdfg`.") == ["- password: 345ertdfg"]
    assert typed_findings("Cracked it! sansa: **Winter1**") == ["- password: Winter1"]
    assert is_negative("The essos sql_svc hash was not cracked even with best64 rules.")


def test_an_earlier_plan_gives_way_to_the_newest_one():
    earlier = "**summarized content:**\nOpen leads / next steps:\n- Try the RaiseChild attack from the parent domain"
    newer = build_summary_prompt([TASK], [_ai(earlier), _ai("The trust is one way. Next I will spray MSSQL logins. "
                                                            "Then I will try WinRM on 10.2.2.5.")])
    summary = extractive_summarize(newer)
    assert "RaiseChild" not in summary and "- Next I will spray MSSQL logins." in _section(summary, "next")
    kept = build_summary_prompt([TASK], [_ai(earlier)])  # nothing newer planned: the earlier plan stands
    assert "- Try the RaiseChild attack from the parent domain" in _section(extractive_summarize(kept), "next")


def test_ticket_blobs_are_listed_smallest_first_and_an_identifier_inside_another_once():
    blobs = ["cd" * 700, "ab" * 600, "ef" * 800]
    output = "\n".join(f"$krb5tgs$23$*u{i}$C.LOCAL$c.local/u{i}*$" + "f" * 32 + "$" + b for i, b in enumerate(blobs))
    work = [_ai(None, _call("c1", "GetUserSPNs.py c.local/bob -request")),
            _tool("c1", output + "\nDC at 10.9.9.9 and 10.9.9.9:88")]
    # 4.2 KB of blobs: within the identifier share of a 16 KB summary (issue 23: the list keeps to its share)
    summary = extractive_summarize(build_summary_prompt([TASK], work), budget_bytes=16384)
    listed = summary.split("\nIdentifiers: ", 1)[1]
    assert listed.index(blobs[1]) < listed.index(blobs[0]) < listed.index(blobs[2])
    assert "10.9.9.9:88" in summary and ", 10.9.9.9," not in f", {listed},"


def test_parts_of_a_turn_cut_twice_merge_instead_of_stacking_their_headings():
    first = write_summary([], summarize=extractive_summarize, opts=SummaryOptions(summary_budget_tokens=400),
                          measure=message_tokens, prefix=[
                              TASK, _ai("Got a kerberoastable hash for svc_web!", _call("c1", "nxc ldap 10.2.2.5"))])
    assert first.text is not None and first.text.count(SPLIT_TURN_SEPARATOR) == 1
    toolish = [_tool("c1", "LDAP 10.2.2.5 389 DC01 [+] corp.local\\bob:Winter2024")]
    second = write_summary([], summarize=extractive_summarize, opts=SummaryOptions(summary_budget_tokens=400),
                           measure=message_tokens, previous_summary=first.text, prefix=[
                               *toolish, _ai("No WinRM for any account.", _call("c2", "nxc winrm 10.2.2.5"))])
    text = second.text or ""
    assert text.count(SPLIT_TURN_SEPARATOR) == 1 and text.count("## Original request") == 1
    assert "kerberoastable hash for svc_web" in text and "No WinRM for any account." in text
