"""Issue 23 item 3: one spelling table pins that the offline summarizer and the ledger keep the same things.

Every credential spelling an operator writes, and every host, domain, user and CA name, is found by the same
detection (summarizer.identifiers); the extractive summary of a prompt holding it quotes it, and a model
summary that left it out gets it back in the ledger.
"""
from __future__ import annotations

import pytest

from summarizer import extractive_summarize, with_ledger
from summarizer.identifiers import extract_findings, extract_names
from summarizer.passes.prompts import build_summary_prompt

# (line as a tool or the agent printed it, the value that must survive)
CREDENTIAL_SPELLINGS = [
    ("Password cracked: jorah:fr3edom", "jorah:fr3edom"),
    ("SMB  10.1.2.3  445  DC01  [+] corp.local\\alice:Summer2024! (Pwn3d!)", "corp.local\\alice:Summer2024!"),
    ("[+] CORP\\bob:Winter99 ", "CORP\\bob:Winter99"),
    ("credentials: CORP\\carol:Xy7#pass", "CORP\\carol:Xy7#pass"),
    ("found valid creds: dave:letmein1", "dave:letmein1"),
    ("The password for user erin is Spring2023", "erin:Spring2023"),
    ("password for `frank` is `Tr0ub4dor`", "frank:Tr0ub4dor"),
    ("login: root   password: toor", "root:toor"),
    ("CORP\\gina:Autumn!1 worked on the file server", "CORP\\gina:Autumn!1"),
]
NAME_SPELLINGS = [
    ("the DC is dc01.corp.local", "dc01.corp.local"),
    ("SMB 10.1.2.3 445 DC01 (name:MEEREEN) (domain:corp.local)", "MEEREEN"),
    ("next: check host WEB01 for WinRM", "WEB01"),
    ("Certificate Authority: CA Name : CORP-DC01-CA", "CORP-DC01-CA"),
    ("machine account FILESRV$ is trusted for delegation", "FILESRV$"),
    ("kerberoastable: svc_sql@corp.local", "svc_sql@corp.local"),
    ("enumerated CORP\\helpdesk in Remote Desktop Users", "CORP\\helpdesk"),
    ("Username: backup_admin", "backup_admin"),
]
# what a tool reported a host is set to or runs: kept by the offline summarizer, restored by the ledger
STATED_SPELLINGS = [
    ("MinimumPasswordLength = 5", "MinimumPasswordLength = 5"),
    ("LockoutBadCount: 0", "LockoutBadCount: 0"),
    ("ms-DS-MachineAccountQuota = 10", "ms-DS-MachineAccountQuota = 10"),
    ("21/tcp open  ftp  vsftpd 2.3.4", "vsftpd 2.3.4"),
    ("80/tcp open  http  Apache httpd 2.4.49 ((Unix))", "Apache httpd 2.4.49"),
]
NOT_CREDENTIALS = ["found: 10.0.0.5:445", "valid: 12:30", "found link: http://x.example/a", "found ok:true"]
NOT_NAMES = ["saved to arya.txt", "import os.path", "version 10.0.17763", "user: none"]


def _prompt(line: str) -> str:
    calls = [{"id": "call_1", "type": "function", "function": {"name": "terminal", "arguments": '{"cmd": "run"}'}}]
    return build_summary_prompt([{"role": "user", "content": "Enumerate the domain."}], [
        {"role": "assistant", "content": None, "tool_calls": calls},
        {"role": "tool", "tool_call_id": "call_1", "content": "banner line\n" + line + "\nfooter line"},
        {"role": "assistant", "content": "Moving on to the next host."},
    ])


@pytest.mark.parametrize("line,value", CREDENTIAL_SPELLINGS)
def test_every_credential_spelling_is_a_finding(line, value):
    assert value in [f.value for f in extract_findings(line)]


@pytest.mark.parametrize("line,value", NAME_SPELLINGS)
def test_every_name_spelling_is_found(line, value):
    assert value in extract_names(line)


@pytest.mark.parametrize("line,value", CREDENTIAL_SPELLINGS + NAME_SPELLINGS + STATED_SPELLINGS)
def test_the_offline_summary_keeps_every_spelling(line, value):
    assert value in extractive_summarize(_prompt(line))


@pytest.mark.parametrize("line,value", CREDENTIAL_SPELLINGS + NAME_SPELLINGS + STATED_SPELLINGS)
def test_the_ledger_restores_every_spelling_a_model_summary_left_out(line, value):
    assert value in with_ledger(_prompt(line), "The agent enumerated the domain.")


@pytest.mark.parametrize("line,value", CREDENTIAL_SPELLINGS + NAME_SPELLINGS + STATED_SPELLINGS)
def test_a_summary_that_quotes_the_value_gets_no_ledger_line_for_it(line, value):
    summary = f"The agent found {value} and {line}."
    assert value not in with_ledger(_prompt(line), summary).removeprefix(summary)


@pytest.mark.parametrize("line", NOT_CREDENTIALS)
def test_addresses_times_and_urls_are_not_credentials(line):
    assert not [f for f in extract_findings(line) if f.kind == "credential"]


@pytest.mark.parametrize("line", NOT_NAMES)
def test_file_names_module_paths_versions_and_placeholders_are_not_names(line):
    assert extract_names(line) == []


def test_a_five_megabyte_line_names_nothing_and_returns_quickly():
    assert extract_names("A" * 5_000_000 + " dc01.corp.local") == []


@pytest.mark.parametrize("line", ["Status: 200", "Content-Type: text/html", "Note: the share is read-only"])
def test_a_header_or_a_remark_is_not_a_setting_the_ledger_restores(line):
    assert "setting:" not in with_ledger(_prompt(line), "The agent enumerated the domain.")


def test_the_ledger_restores_a_bounded_number_of_settings_from_a_dump():
    dump = "\n".join(f"Setting{i}Value = {i}" for i in range(300))
    ledger = with_ledger(_prompt(dump), "The agent read the registry.")
    assert 0 < ledger.count("- setting: ") <= 12


def test_an_address_is_not_a_service_version():
    assert "service version" not in with_ledger(_prompt("nmap found 22/tcp on 10.0.0.5"), "ssh is open")
