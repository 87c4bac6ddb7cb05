"""The summary quality gate and the fallback structure (compaction.md §6, acceptance facts 43-45)."""
from __future__ import annotations

from summarizer.compact.audit import NONE_CAPTURED, ask_reflected, audit_summary, has_heading, structure_fallback
from summarizer.compact.prompt import IDENTIFIERS_HEADING, REQUIRED_HEADINGS
from summarizer.identifiers import extract_identifiers

GOOD = "\n".join(f"{h}\nNone." for h in REQUIRED_HEADINGS)


def test_fact_43_identifier_extraction_feeds_the_audit():
    """Fact 43 (extraction is the TOOLS helper's; here: the audit uses it as specified)."""
    assert extract_identifiers("a1b2c3d4e5f6 and A1B2C3D4E5F6") == ["A1B2C3D4E5F6"]
    ids = extract_identifiers("Year 2026 count 42 port 18789 ticket 123456 URL https://example.com/a, "
                              "path /tmp/x.log, tiny /a, on/off.")
    assert {"123456", "https://example.com/a", "/tmp/x.log"} <= set(ids)
    assert not {"2026", "42", "18789", "/a", "/off"} & set(ids)


def test_fact_44_a_summary_without_headings_fails():
    """Fact 44: no headings -> missing_section problems."""
    result = audit_summary("just some text")
    assert not result.ok and f"missing_section:{REQUIRED_HEADINGS[0]}" in result.problems


def test_fact_44_a_heading_mentioned_in_prose_does_not_count():
    """Fact 44: "See ## Key decisions above." is not the heading."""
    summary = GOOD.replace("## Key decisions\n", "See ## Key decisions above.\n")
    assert not has_heading(summary, "## Key decisions")
    assert audit_summary(summary).problems == ["missing_section:## Key decisions"]


def test_fact_44_identifiers_are_enforced_only_under_strict():
    """Fact 44: policy off or custom -> identifiers are not enforced."""
    ids = ["10.0.0.5:445", "DEADBEEF01"]
    strict = audit_summary(GOOD, identifiers=ids)
    assert not strict.ok and strict.missing_identifiers == ids
    assert audit_summary(GOOD, identifiers=ids, identifier_policy="off").ok
    assert audit_summary(GOOD, identifiers=ids, identifier_policy="custom").ok


def test_fact_44_lower_case_hex_satisfies_an_upper_case_identifier():
    """Fact 44: a lower-case hex value in the summary satisfies an upper-case identifier."""
    assert audit_summary(GOOD + "\nhash deadbeef01", identifiers=["DEADBEEF01"]).ok


def test_fact_44_the_latest_ask_must_be_reflected():
    """Fact 44: Chinese ask with no overlap fails, with "状态更新" passes; stopword-only overlap fails;
    a single matching word out of several fails (two required)."""
    assert audit_summary(GOOD, latest_ask="请提供状态更新").problems == ["latest_user_ask_not_reflected"]
    assert audit_summary(GOOD + "\n状态更新: 进行中", latest_ask="请提供状态更新").ok
    assert not ask_reflected("What is the plan to migrate?", "What is it? It is the thing to do.")
    assert not ask_reflected("Please reset account password now", "Password issue tracked.")
    assert ask_reflected("Please reset account password now", "Password reset is in progress.")
    assert ask_reflected("ok", "anything")


def test_fact_45_plain_text_is_rebuilt_under_key_decisions():
    """Fact 45: legacy plain text -> the structure, text under Key decisions (our "Decisions")."""
    rebuilt = structure_fallback("We chose nmap over masscan for 10.0.0.5.")
    for heading in REQUIRED_HEADINGS + (IDENTIFIERS_HEADING,):
        assert has_heading(rebuilt, heading)
    assert "## Key decisions\nWe chose nmap over masscan for 10.0.0.5." in rebuilt
    assert "## Goal\nNone captured." in rebuilt
    assert f"{IDENTIFIERS_HEADING}\n- 10.0.0.5" in rebuilt


def test_fact_45_structured_summaries_pass_unchanged_and_near_matches_are_rebuilt():
    """Fact 45: an already structured summary is returned unchanged; a near-match heading is rebuilt."""
    assert structure_fallback(GOOD) == GOOD
    near = GOOD.replace("## Next steps", "## Next steps (active)")
    assert structure_fallback(near) != near and has_heading(structure_fallback(near), "## Next steps")


def test_fact_45_policy_off_lists_no_identifiers():
    """Fact 45: policy off -> "None captured." under Exact identifiers."""
    assert structure_fallback("host 10.0.0.5", identifier_policy="off").endswith(
        f"{IDENTIFIERS_HEADING}\n{NONE_CAPTURED}")


def test_payload_sized_hex_runs_are_not_enforced_and_problems_stay_short():
    ticket = "AB" * 1_000
    assert audit_summary(GOOD, identifiers=[ticket]).ok
    long_id = "CD" * 50
    result = audit_summary(GOOD, identifiers=[long_id])
    assert result.missing_identifiers == [long_id] and len(result.reason) < 120
