"""The product's default summarizer (extractive) doing compactions under the strict identifier policy.

With no model endpoint the window fit and "Compact now" run on the extractive summarizer, so it has to pass
the audit on its own: every audited identifier listed (payload-sized ones skipped), the newest ask restated
under ## Goal, the size the prompt states respected, and the identifiers a retry names included.
"""
from __future__ import annotations

import re

import pytest

from summarizer.compact.audit import audit_summary, enforced_identifiers
from summarizer.compact.errors import ContextTooLarge
from summarizer.compact.fit import compact_now, fit_to_window
from summarizer.compact.prompt import CHARS_PER_TOKEN_ESTIMATE, build_compaction_prompt, render_messages
from summarizer.compact.summary_writer import SummaryOptions, identifier_budget_tokens, write_summary
from summarizer.compact.window_cut import fitted_options
from summarizer.extractive.briefing import extractive_summarize, make_extractive
from summarizer.identifiers import extract_identifiers, missing_identifiers
from summarizer.settings.config import SummarizerConfig
from summarizer.tokens.count import message_tokens
from tests.conftest import corpus_params, load_corpus

NO_RESTORE = SummarizerConfig(preserve_last=False, use_qa=False, keep_qa_sections=1000)
TICKET = "$krb5tgs$23$*sql_svc$ESSOS.LOCAL$essos.local/sql_svc*$" + "ab12" * 400  # a multi-KB payload
BUDGET_RE = re.compile(r"\((\d+) characters\)")


def _u(text: str) -> dict:
    return {"role": "user", "content": text}


def _a(text: str) -> dict:
    return {"role": "assistant", "content": text}


def _hosts(count: int) -> str:
    return "\n".join(f"Nmap scan report for 10.20.{i // 200}.{i % 200 + 1}: 445/tcp open" for i in range(count))


def test_a_stated_size_is_respected():
    span = [_u("Scan the lab"), _a(_hosts(400))]
    summary = extractive_summarize(build_compaction_prompt(span, summary_budget_tokens=300))
    assert len(summary.encode()) <= 300 * CHARS_PER_TOKEN_ESTIMATE


def test_payload_sized_identifiers_are_skipped_and_the_audited_ones_listed():
    span = [_u("Roast the service accounts"), _a(f"Got {TICKET}\nhost 10.0.0.7 file /tmp/roast.txt")]
    summary = extractive_summarize(build_compaction_prompt(span, summary_budget_tokens=400))
    listed = summary.split("## Exact identifiers\n", 1)[1]
    assert "ab12" * 60 not in listed and TICKET not in summary  # quoted lines stay capped, the list skips it
    assert missing_identifiers(["10.0.0.7", "/tmp/roast.txt"], summary) == []


def test_the_newest_ask_is_restated_under_goal_even_when_findings_crowd_the_budget():
    findings = "\n".join(f"[+] essos.local\\user{i}:Passw0rd{i} (Pwn3d!)" for i in range(300))
    span = [_u("Crack the hashes"), _a(findings), _u("Now pivot to the SQL server and report the version")]
    summary = extractive_summarize(build_compaction_prompt(span, summary_budget_tokens=400,
                                                           latest_ask=span[-1]["content"]))
    goal = summary.split("## Goal\n", 1)[1].split("\n## ", 1)[0]
    assert "Now pivot to the SQL server" in goal
    assert audit_summary(summary, latest_ask=span[-1]["content"], identifier_policy="off").ok


def test_a_retry_lists_the_named_identifiers_first():
    span = [_u("Map the lab"), _a(_hosts(600))]
    named = ["10.20.2.199", "10.20.1.7"]
    summary = extractive_summarize(build_compaction_prompt(span, missing=named, summary_budget_tokens=200))
    assert missing_identifiers(named, summary) == []


def test_the_budget_grows_to_hold_the_audited_identifiers():
    span = [_u("Map the lab"), _a(_hosts(300))]
    ids = enforced_identifiers(extract_identifiers(render_messages(span)))
    fake_prompts: list[str] = []

    def summarize(prompt: str) -> str:
        fake_prompts.append(prompt)
        return extractive_summarize(prompt)

    outcome = write_summary(span, summarize=summarize, opts=SummaryOptions(summary_budget_tokens=256),
                            measure=message_tokens)
    stated = int(BUDGET_RE.search(fake_prompts[0]).group(1))
    assert outcome.error is None and len(fake_prompts) == 1
    assert stated >= identifier_budget_tokens(ids) * CHARS_PER_TOKEN_ESTIMATE - CHARS_PER_TOKEN_ESTIMATE


def test_the_summary_budget_fits_the_room_and_half_of_what_it_replaces():
    work = [{"role": "system", "content": "sys"}, _u("task " * 50), _a("x " * 4_000), _u("next"), _a("y " * 500)]
    opts = SummaryOptions(summary_budget_tokens=8_000, view_budget_tokens=1_000)
    fitted = fitted_options(opts, work, 1, [1, 2], [3, 4], message_tokens, None)
    kept = sum(message_tokens(work[i]) for i in (0, 3, 4))
    assert fitted.summary_budget_tokens < 1_000 - kept
    manual = fitted_options(SummaryOptions(summary_budget_tokens=8_000), work, 1, [1, 2], [3, 4], message_tokens, None)
    assert manual.summary_budget_tokens <= (message_tokens(work[1]) + message_tokens(work[2])) // 2


@pytest.mark.parametrize("path", corpus_params())
def test_every_corpus_file_compacts_with_the_extractive_summarizer(path):
    """A forced window cut (Compact now, keeping ~4k tokens) passes the strict audit: nothing fails closed."""
    messages = load_corpus(path)
    result = compact_now(messages, summarize=make_extractive(), keep_recent_tokens=4_000)
    assert result.error is None, result.audit
    if result.compacted:
        covered = [messages[i] for i in result.covered]
        required = enforced_identifiers(extract_identifiers(render_messages(covered)))
        assert missing_identifiers(required, result.summary) == []
        assert result.tokens < result.tokens_before


@pytest.mark.parametrize("path", corpus_params())
def test_every_corpus_file_fits_16k_by_the_window_cut_or_is_justifiably_too_large(path):
    messages = load_corpus(path)
    try:
        result = fit_to_window(messages, window_tokens=16_000, summarize=make_extractive(), config=NO_RESTORE)
    except ContextTooLarge as error:  # only when the part no step may drop is itself too big
        assert error.irreducible_tokens > error.budget_tokens, str(error)
        return
    assert result.error is None and result.fits, (result.error, result.audit)
