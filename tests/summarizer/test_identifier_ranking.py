"""Identifiers ranked by use and the share of a summary they may take (issue 23 item 2). Synthetic only."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from summarizer.compact.prompt import build_compaction_prompt
from summarizer.extractive.briefing import IDENTIFIER_SHARE_MAX, extractive_summarize
from summarizer.extractive.entries import requested_budget_chars
from summarizer.extractive.facts import byte_size, is_error
from summarizer.extractive.ranking import is_random_looking, prompt_identifiers, rank_by_use
from summarizer.extractive.sections import IDENTIFIERS_LABEL
from summarizer.passes.prompts import build_summary_prompt
from tests.summarizer.test_extractive_briefing import _ai, _call, _tool
from tests.summarizer.test_extractive_ranking import _section

TASK = {"role": "user", "content": "Inventory the lab and report what each host runs."}
_HEX = [f"{i:02x}c0ffee{i:02x}b4d{i:03d}" for i in range(24)]  # 16-char runs, fewer than a dump has


def _listed(summary: str) -> str:
    return summary.split(f"\n{IDENTIFIERS_LABEL} ", 1)[1] if f"\n{IDENTIFIERS_LABEL} " in summary else ""


def test_what_the_agent_used_comes_first_and_random_tokens_nobody_used_last():
    ids = ["4f1c2a9be0d3", "/etc/krb5.conf", "web01.lab.test", "550e8400-e29b-41d4-a716-446655440000", "12345678",
           "10.3.3.7"]
    ranked = rank_by_use(ids, "cat /etc/krb5.conf on 10.3.3.7, then crack 4F1C2A9BE0D3")
    assert ranked == ["4f1c2a9be0d3", "/etc/krb5.conf", "10.3.3.7", "web01.lab.test",
                      "550e8400-e29b-41d4-a716-446655440000", "12345678"]
    assert is_random_looking("deadbeef01") and is_random_looking("1234567") and not is_random_looking("web01.lab")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["a1b2c3d4e5", "/tmp/x.txt", "host.lab.test", "10.1.1.1", "99999999",
                                 "CORP\\svc", "0badc0de77"]), unique=True), st.text(max_size=80))
def test_ranking_is_a_stable_permutation_with_used_identifiers_first(ids, used):
    ranked = rank_by_use(ids, used)
    assert sorted(ranked) == sorted(ids) and rank_by_use(ids, used) == ranked
    flags = [i.upper() in used.upper() if is_random_looking(i) else i in used for i in ranked]
    assert flags == sorted(flags, reverse=True)  # every used one before every unused one


def test_a_list_cut_for_space_drops_the_random_tokens_nobody_used_before_any_name():
    banner = "\n".join(f"svc{i} banner {h}" for i, h in enumerate(_HEX))
    hosts = "\n".join(f"host{i}.lab.test is up" for i in range(12))
    work = [_ai(None, _call("c1", "scan lab")), _tool("c1", f"{banner}\n{hosts}"),
            _ai(f"Only {_HEX[5]} matters.", _call("c2", "whois lab"))]
    summary = extractive_summarize(build_summary_prompt([TASK], work), budget_bytes=1500)
    listed = _listed(summary)
    assert _HEX[5] in summary and listed.startswith("host0.lab.test") and "host11.lab.test" in listed
    assert "omitted for space" in listed and _HEX[23] not in listed


def test_an_earlier_summary_listing_a_value_is_not_the_agent_using_it():
    earlier = f"**summarized content:**\nDone:\n- terminal: scan lab → ok\n\n{IDENTIFIERS_LABEL} {_HEX[0]}"
    work = [_ai(earlier), _ai(None, _call("c1", "scan again")), _tool("c1", f"db01.lab.test answers {_HEX[1]}")]
    ids, _ = prompt_identifiers(build_summary_prompt([TASK], work))
    assert ids.index("db01.lab.test") < ids.index(_HEX[0])


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=0, max_value=60), st.integers(min_value=800, max_value=9000))
def test_a_briefing_never_spends_more_than_its_share_on_the_identifier_list(hosts, budget):
    lines = "\n".join(f"10.4.{i // 250}.{i % 250} open /srv/share{i}/data.bin {_HEX[i % 24]}" for i in range(hosts))
    work = [_ai("Scanning.", _call("c1", "scan 10.4.0.0/16")), _tool("c1", lines or "nothing")]
    summary = extractive_summarize(build_summary_prompt([TASK], work), budget_bytes=budget)
    assert byte_size(summary) <= budget
    assert byte_size(_listed(summary)) <= IDENTIFIER_SHARE_MAX * budget


def test_a_checkpoint_lists_every_audited_identifier_and_names_only_within_the_share():
    principals = "\n".join(f"[-] lab.test\\user{i:03d}:Spring2024 STATUS_LOGON_FAILURE" for i in range(150))
    addresses = [f"10.5.5.{i}" for i in range(1, 9)]
    work = [TASK, _ai(None, _call("c1", "spray " + " ".join(addresses))), _tool("c1", principals),
            _ai("Every login failed.")]
    prompt = build_compaction_prompt(work, summary_budget_tokens=600)
    checkpoint = extractive_summarize(prompt)
    listed = checkpoint.split("## Exact identifiers\n", 1)[1]
    assert all(address in checkpoint for address in addresses)
    names = [line for line in listed.splitlines() if "\\user" in line]
    assert names and sum(byte_size(line) + 1 for line in names) <= IDENTIFIER_SHARE_MAX * (
        requested_budget_chars(prompt) or 0)


def test_a_failure_the_agent_reports_in_its_own_words_is_a_dead_end():
    work = [_ai("We saw that bob got STATUS_ACCOUNT_LOCKED_OUT on the file server.", _call("c1", "id"))]
    assert "STATUS_ACCOUNT_LOCKED_OUT" in _section(extractive_summarize(build_summary_prompt([TASK], work)),
                                                   "blocked")


def test_option_names_in_a_usage_synopsis_are_not_errors():
    assert not is_error("usage: scanner [-h] [--timeout TIMEOUT] [--retries N]")
    assert is_error("scanner: error: unrecognized arguments: --fast")
