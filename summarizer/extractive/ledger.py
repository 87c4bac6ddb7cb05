"""The ledger: what a model's summary must not lose, appended deterministically to every LLM summary.

Factory's evaluation of context compression found artifact tracking (which files, hashes, credentials) to be
the weakest dimension of every LLM summarizer. So after the model answers, the typed findings
(summarizer.extractive.facts.typed_findings), the settings and service versions tools reported
(`stated_values`) and the identifiers of the prompt that its summary does not
quote are appended under a ledger title: a model that forgets a credential cannot lose it. Nothing is
appended when the summary already holds everything, so a good summary stays as the model wrote it. The
extractive summarizer needs no ledger: it lists them itself.
"""
from __future__ import annotations

from collections.abc import Callable

from summarizer.extractive.entries import parse_prompt, requested_headings
from summarizer.extractive.facts import SERVICE_VERSION_LABEL, squash, stated_values, typed_findings
from summarizer.extractive.ranking import prompt_identifiers
from summarizer.extractive.sections import LEDGER_TITLE
from summarizer.identifiers import missing_identifiers

__all__ = ["ledger_for", "with_ledger", "ledgered", "LEDGER_TITLE", "LEDGER_HEADING"]

LEDGER_HEADING = "## " + LEDGER_TITLE.rstrip(":")


def _missing_findings(prompt: str, summary: str) -> list[str]:
    entries = parse_prompt(prompt)
    text = "\n".join(entry.text for entry in entries)
    # what tools reported a host is set to and runs: from their output, where the offline summarizer reads it
    output = "\n".join(entry.text for entry in entries if entry.kind == "result")
    lines = typed_findings(text) + stated_values(output)
    flat = squash(summary)
    return [line for line in lines if not _quoted(line, summary, flat)]


def _quoted(line: str, summary: str, flat: str) -> bool:
    """True when the summary already says the line's value: verbatim, with other spacing, or for a service
    version ("ftp vsftpd 2.3.4", as an nmap row reads) its name and version alone ("vsftpd 2.3.4")."""
    label, value = line.split(": ", 1)
    if value in summary or squash(value) in flat:
        return True
    return label == SERVICE_VERSION_LABEL and " ".join(value.split()[-2:]) in flat


def ledger_for(prompt: str, summary: str) -> str:
    """The ledger block for `summary` of `prompt` ("" when the summary already quotes everything)."""
    findings = _missing_findings(prompt, summary)
    identifiers, _ = prompt_identifiers(prompt)
    quoted = summary + "\n" + "\n".join(findings)
    missing = missing_identifiers(identifiers, quoted)
    if not findings and not missing:
        return ""
    lines = findings + ([f"- identifiers: {', '.join(missing)}"] if missing else [])
    title = LEDGER_HEADING if requested_headings(prompt) else LEDGER_TITLE
    return f"{title}\n" + "\n".join(lines)


def with_ledger(prompt: str, summary: str) -> str:
    """`summary` with the ledger for `prompt` appended (unchanged when there is nothing to add)."""
    ledger = ledger_for(prompt, summary)
    return f"{summary.rstrip()}\n\n{ledger}" if ledger else summary


def ledgered(summarize: Callable[[str], str]) -> Callable[[str], str]:
    """A summarize callable whose every answer carries the ledger of its prompt."""

    def summarize_with_ledger(prompt: str) -> str:
        return with_ledger(prompt, summarize(prompt))

    summarize_with_ledger.__name__ = f"ledgered_{getattr(summarize, '__name__', 'summarize')}"
    return summarize_with_ledger
