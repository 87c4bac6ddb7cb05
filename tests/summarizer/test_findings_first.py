"""Findings first, noise last (issue 23 item 2): what the agent concluded outranks the action log, an action is
worth what it found, a checkpoint's dead ends go back where they belong, a topic word is not a success, a value
the task named is no evidence of later use, a format legend is not a credential, and a policy value or a service
version is worth keeping from a noisy output. Synthetic transcripts only."""
from __future__ import annotations

from summarizer.compact.prompt import build_compaction_prompt
from summarizer.extractive.briefing import extractive_summarize
from summarizer.extractive.facts import reports_success
from summarizer.identifiers import extract_findings
from summarizer.passes.prompts import build_summary_prompt
from tests.summarizer.test_extractive_briefing import _ai, _call, _tool
from tests.summarizer.test_extractive_ranking import _section

TASK = {"role": "user", "content": "Map the lab at 10.7.0.0/24 and report every way in."}
EARLIER = "**summarized content:**\n"


def test_the_agents_conclusion_outranks_any_line_of_the_action_log():
    codes = [f"E{i}0" for i in range(10, 18)]
    actions = "\n".join(f"- terminal: rdesktop host{i} → ERROR: connection refused by host{i}.lab.test:3389 (E{i}0)"
                         for i in range(10, 18))
    earlier = f"{EARLIER}Done:\n{actions}\n\nNegative results and dead ends:\n- Nothing listens on port 3389 anywhere."
    # every action line scores all it can (an error, an address, a code the agent quoted again afterwards)
    work = [_ai(earlier), _ai(f"Moving on: {' '.join(codes)}.")]
    summary = extractive_summarize(build_summary_prompt([TASK], work), budget_bytes=600)
    assert "- Nothing listens on port 3389 anywhere." in summary
    assert actions.splitlines()[-1] not in summary  # the room went to the conclusion, not to one more action


def test_the_agents_newest_plan_outranks_any_line_of_the_action_log():
    actions = "\n".join(f"- terminal: rdesktop host{i} → ERROR: connection refused by host{i}.lab.test:3389 (E{i}0)"
                         for i in range(10, 18))
    codes = " ".join(f"E{i}0" for i in range(10, 18))
    work = [_ai(f"{EARLIER}Done:\n{actions}"), _ai(f"Codes {codes}. Next I will try the web console on port 8443. "
                                                      "Then I will spray WinRM.")]
    summary = extractive_summarize(build_summary_prompt([TASK], work), budget_bytes=600)
    assert "- Next I will try the web console on port 8443." in _section(summary, "next")


def test_a_merged_action_is_worth_what_it_found_not_what_it_ran():
    earlier = EARLIER + "Done:\n" + "\n".join([
        "- terminal: grep -ri password /srv/share/it/creds.txt → no output",
        "- terminal: ls /srv/share → [+] found db_backup.kdbx (KeePass database)",
    ])
    summary = extractive_summarize(build_summary_prompt([TASK], [_ai(earlier)]), budget_bytes=250)
    assert "db_backup.kdbx" in summary and "grep" not in summary


def test_a_checkpoints_dead_ends_filed_under_its_progress_come_back_as_dead_ends():
    work = [TASK, _ai(None, _call("c1", "ssh ops@10.7.0.9")), _tool("c1", "Permission denied (publickey)."),
            _ai("No SSH access for any account. Trying the web console next.")]
    checkpoint = extractive_summarize(build_compaction_prompt(work, summary_budget_tokens=400))
    briefing = extractive_summarize(build_summary_prompt([TASK], [_ai(EARLIER + checkpoint.replace(
        "### Blocked", "## Early progress"))]))
    assert "- No SSH access for any account." in _section(briefing, "blocked")
    assert "No SSH access" not in _section(briefing, "done")


def test_a_result_that_only_names_credentials_and_then_fails_is_a_failure():
    assert not reports_success("[*] Collecting stored credentials (user:rid:lm:nt)")
    assert reports_success("[+] corp.lab\\ops:Winter24 (admin)")
    output = ("[*] Collecting stored credentials (user:rid:lm:nt)\n"
              "[-] Replication refused: ERROR_REPLICA_NOT_ALLOWED - access to the naming context is denied\n"
              "[*] Cleaning up...")
    work = [_ai(None, _call("c1", "dumptool corp.lab/ops@10.7.0.2")), _tool("c1", output)]
    blocked = _section(extractive_summarize(build_summary_prompt([TASK], work)), "blocked")
    assert "ERROR_REPLICA_NOT_ALLOWED" in blocked


def test_a_format_legend_in_brackets_is_not_a_credential():
    assert extract_findings("[*] Collecting stored credentials (user:rid:lm:nt)") == []
    assert [f.value for f in extract_findings("credentials: corp\\bob:S3cret!")] == ["corp\\bob:S3cret!"]


def test_a_value_the_task_named_is_no_evidence_that_a_line_was_used_later():
    task = {"role": "user", "content": "Enumerate the file server 10.7.0.40 and report what it shares."}
    noise = "\n".join(f"10.7.0.40 share{i:02d} READ default export" for i in range(10))
    work = [_ai(None, _call("c1", "smbmap -H 10.7.0.40")), _tool("c1", noise + "\nbackup_2019 READ,WRITE vault.kdbx"),
            _ai(None, _call("c2", "smbclient //10.7.0.40/backup_2019 -c 'get vault.kdbx'")), _tool("c2", "saved"),
            _ai(None, _call("c3", "nmap -sV 10.7.0.40")), _tool("c3", "445/tcp open microsoft-ds")]
    summary = extractive_summarize(build_summary_prompt([task], work), budget_bytes=1000)
    assert "backup_2019 READ,WRITE vault.kdbx" in summary


def test_a_policy_value_and_a_service_version_are_kept_from_a_noisy_output():
    chatter = [f"Processing section {i} of the export" for i in range(20)]
    policy = chatter[:10] + ["LockoutThreshold = 0"] + chatter[10:]
    banner = chatter[:10] + ["220 (vsftpd 2.3.4)"] + chatter[10:]
    work = [_ai(None, _call("c1", "policy-export lab.test")), _tool("c1", "\n".join(policy)),
            _ai(None, _call("c2", "portscan 10.7.0.21")), _tool("c2", "\n".join(banner))]
    summary = extractive_summarize(build_summary_prompt([TASK], work))
    assert "LockoutThreshold = 0" in summary and "vsftpd 2.3.4" in summary
