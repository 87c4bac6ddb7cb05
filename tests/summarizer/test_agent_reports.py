"""What the agent reports about its own work is kept (issue 23, third pass): the items of a list it announced as
its findings ("Key findings:"), a sentence it exclaimed about something it names, an earlier summary's listed
nonce that nobody wrote falls back to the noise line, and a label that ends a sentence names nothing.
Synthetic transcripts only."""
from __future__ import annotations

from summarizer.compact.prompt import build_compaction_prompt
from summarizer.extractive.briefing import extractive_summarize
from summarizer.extractive.entries import parse_prompt
from summarizer.extractive.ranking import listed_identifiers
from summarizer.identifiers import extract_names
from summarizer.passes.prompts import build_summary_prompt
from tests.summarizer.test_extractive_briefing import _ai, _call, _tool
from tests.summarizer.test_extractive_ranking import _section

TASK = {"role": "user", "content": "Map the lab at 10.7.0.0/24 and report every way in."}


def _briefing(*work: dict, budget: int = 8192) -> str:
    return extractive_summarize(build_summary_prompt([TASK], list(work)), budget_bytes=budget)


def test_the_items_of_a_list_the_agent_announced_as_findings_are_its_conclusions():
    note = ("The scan finished. Key findings:\n- WEB02$ has unconstrained delegation\n- the print spooler runs on "
            "every server\n\nLet me look at the certificate templates next.")
    summary = _briefing(_ai(note, _call("c1", "certipy find -u x")), _tool("c1", "[*] Found 3 templates"),
                        _ai("Templates read."))
    findings = _section(summary, "critical")
    assert "- WEB02$ has unconstrained delegation" in findings
    assert "- the print spooler runs on every server" in findings


def test_the_steps_of_a_list_the_agent_announced_as_its_plan_stay_intents():
    note = "Enumeration done. Let me:\n- check WEB02$ for delegation\n- read the certificate templates"
    summary = _briefing(_ai(note, _call("c1", "findDelegation")), _tool("c1", "No entries found"), _ai("Done."))
    assert "check WEB02$ for delegation" not in _section(summary, "critical")


def test_a_sentence_the_agent_exclaimed_about_something_it_names_is_kept():
    filler = [_ai(f"Reading share listing {i} of the file server now.", _call(f"c{i}", f"smbclient //fs/s{i}"))
              for i in range(12)]
    results = [_tool(f"c{i}", f"  data{i}  D  0  Mon Jan  1 00:00:00 2024") for i in range(12)]
    work = [m for pair in zip(filler, results, strict=True) for m in pair]
    summary = _briefing(_ai("10.7.0.4:445 has SMB signing disabled!"), *work, budget=900)
    assert "10.7.0.4:445 has SMB signing disabled!" in summary


def test_a_bare_exclamation_carries_nothing_to_keep():
    summary = _briefing(_ai("Excellent!"), _ai("Moving on.", _call("c1", "nmap -p- 10.7.0.4")),
                        _tool("c1", "22/tcp open ssh OpenSSH 8.9p1"))
    assert "Excellent!" not in summary


def test_a_nonce_an_earlier_summary_listed_falls_back_to_the_noise_line():
    earlier = ("## Goal\nMap the lab.\n\n## Progress\n### Done\n- scanned 10.7.0.4\n\n## Exact identifiers\n"
               "- 10.7.0.4\n- 4815162342\n")
    compacted = "The earlier conversation was compacted.\n<summary>\n" + earlier + "</summary>"
    work = [{"role": "user", "content": compacted},
            _ai("Next host.", _call("c1", "nmap 10.7.0.5")), _tool("c1", "22/tcp open ssh")]
    prompt = build_compaction_prompt(work, summary_budget_tokens=400)
    listed = listed_identifiers(prompt, parse_prompt(prompt), checkpoint=True)
    assert "4815162342" in listed.noise and "4815162342" not in listed.ids
    assert "10.7.0.4" in listed.ids  # the Done line quotes it: the agent's own work


def test_a_label_that_ends_a_sentence_names_nothing():
    assert extract_names("Roasted from corp.local domain. Previously had 1 bad password count.") == ["corp.local"]
    assert extract_names("A Debian host. All 1000 scanned ports closed.") == []
    assert extract_names("Username ........ : sql_svc") == ["sql_svc"]
