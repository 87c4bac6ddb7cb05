"""Quality gate for compaction summaries (compaction.md §6, acceptance facts 44-45).

A summary replaces history, so it is checked before it is used: the required headings must be real
headings (a line of their own, not a mention in prose), every strict-policy identifier from the compacted
span must appear (hex case-insensitively), and the latest user ask in the span must be reflected by at least
two meaningful words (one if the ask has only one). The caller retries once naming what is missing and fails
closed after that. `structure_fallback` turns an unstructured summary (an extractive one, a legacy plain
text) into the required layout, putting the text under "Key decisions" without inventing anything.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from summarizer.compact.prompt import IDENTIFIERS_HEADING, REQUIRED_HEADINGS
from summarizer.identifiers import extract_identifiers, missing_identifiers

__all__ = ["AuditResult", "audit_summary", "has_heading", "ask_reflected", "structure_fallback",
           "enforced_identifiers", "NONE_CAPTURED", "MIN_ASK_MATCHES", "MAX_ENFORCED_IDENTIFIER_CHARS"]

NONE_CAPTURED = "None captured."
MIN_ASK_MATCHES = 2
# Longer "identifiers" are payloads (Kerberos ticket hashes, base64 dumps of several KB): no summary budget can
# carry them verbatim, so they are not enforced; the memory flush (compaction.md §8) keeps them as flow notes.
MAX_ENFORCED_IDENTIFIER_CHARS = 200
_PROBLEM_ID_CHARS = 60
_STEM_CHARS = 5  # "password" matches "passwords", "migrate" matches "migration"
_WORD_RE = re.compile(r"[a-z0-9][a-z0-9_'-]{2,}")
_CJK_RE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]+")
_STOPWORDS = frozenset("""
a about above after again all also am an and any are as at be been before being below between both but by can
could did do does doing done for from further had has have having he her here hers him his how i if in into is it
its just me more most my no nor not now of off on once only or other our ours out over own please same she should
so some such than that the their them then there these they this those through to too under until up very was we
were what when where which while who whom why will with would you your yours hey hi thanks thank ok okay let lets
need want can't don't i'm it's
""".split())


@dataclass
class AuditResult:
    ok: bool
    problems: list[str] = field(default_factory=list)
    missing_identifiers: list[str] = field(default_factory=list)

    @property
    def reason(self) -> str:
        return "; ".join(self.problems)


def has_heading(summary: str, heading: str) -> bool:
    """True when `heading` is a line of its own (case-insensitive, optional trailing colon)."""
    want = heading.strip().lower()
    return any(line.strip().rstrip(":").strip().lower() == want for line in summary.splitlines())


def _ask_terms(text: str) -> list[str]:
    words = [w.strip("'-") for w in _WORD_RE.findall(text.lower())]
    terms = [w for w in words if len(w) >= 3 and w not in _STOPWORDS]
    for run in _CJK_RE.findall(text):
        terms.extend([run] if len(run) == 1 else [run[i:i + 2] for i in range(len(run) - 1)])
    return list(dict.fromkeys(terms))


def _term_found(term: str, summary_low: str, summary_words: set[str]) -> bool:
    if _CJK_RE.fullmatch(term):
        return term in summary_low
    if term in summary_words:
        return True
    return len(term) >= _STEM_CHARS and any(w[:_STEM_CHARS] == term[:_STEM_CHARS] and len(w) >= _STEM_CHARS
                                            for w in summary_words)


def ask_reflected(ask: str, summary: str) -> bool:
    """True when the summary shares at least two meaningful words (or CJK bigrams) with the ask."""
    terms = _ask_terms(ask)
    if not terms:
        return True
    low = summary.lower()
    words = set(w.strip("'-") for w in _WORD_RE.findall(low))
    found = sum(1 for t in terms if _term_found(t, low, words))
    return found >= min(MIN_ASK_MATCHES, len(terms))


def enforced_identifiers(identifiers: Sequence[str]) -> list[str]:
    """The identifiers the strict audit requires: all but payload-sized runs."""
    return [i for i in identifiers if len(i) <= MAX_ENFORCED_IDENTIFIER_CHARS]


def _short(identifier: str) -> str:
    return identifier if len(identifier) <= _PROBLEM_ID_CHARS else identifier[:_PROBLEM_ID_CHARS] + "…"


def audit_summary(summary: str, *, identifiers: Sequence[str] = (), latest_ask: str | None = None,
                  identifier_policy: str = "strict", headings: Sequence[str] = REQUIRED_HEADINGS) -> AuditResult:
    """Check a compaction summary; `identifiers` are enforced only under the strict policy."""
    problems = [f"missing_section:{h}" for h in headings if not has_heading(summary, h)]
    missing: list[str] = []
    if identifier_policy == "strict" and identifiers:
        missing = missing_identifiers(enforced_identifiers(identifiers), summary)
        if missing:
            problems.append("missing_identifiers:" + ", ".join(_short(m) for m in missing[:20]))
    if latest_ask and not ask_reflected(latest_ask, summary):
        problems.append("latest_user_ask_not_reflected")
    return AuditResult(ok=not problems, problems=problems, missing_identifiers=missing)


def structure_fallback(summary: str, *, identifier_policy: str = "strict") -> str:
    """An already structured summary unchanged; anything else rebuilt into the required headings (fact 45).

    The text goes under "Key decisions"; the other headings say "None captured."; under the strict policy the
    identifiers the text itself contains are listed under "Exact identifiers" (nothing is invented).
    """
    text = (summary or "").strip()
    if all(has_heading(text, h) for h in REQUIRED_HEADINGS):
        return text
    sections = []
    for heading in REQUIRED_HEADINGS:
        body = text if heading == "## Key decisions" and text else NONE_CAPTURED
        sections.append(f"{heading}\n{body}")
    ids = extract_identifiers(text) if identifier_policy == "strict" else []
    sections.append(f"{IDENTIFIERS_HEADING}\n" + ("\n".join(f"- {i}" for i in ids) if ids else NONE_CAPTURED))
    return "\n\n".join(sections)
