"""The offline summarizer's shortcuts (issue 25, item 3: its work per turn) answer exactly as the long way.

A block is looked for only where its opening tag occurs, a line's classifiers are remembered, and whitespace is
squashed with str.split: each is an optimization only, so each must agree with the plain computation on any text.
"""
from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from summarizer import identifiers
from summarizer.extractive import entries, facts

# Texts made of the prompt's own pieces: block tags on lines of their own, inline mentions of them, words.
_TAGS = [f"<{t}>" for t in ("previous_summary", "summary", "conversation", "messages", "tasks", "operator_focus",
                            "latest_user_request")]
_PIECES = st.sampled_from([*_TAGS, *(t.replace("<", "</") for t in _TAGS), "word", "a <summary> mention", " ",
                           "10.0.0.5", '<task id="0">', "</task>", "<instructions>x</instructions>"])
_PROMPTS = st.lists(st.tuples(_PIECES, st.sampled_from(["\n", " ", ""])), max_size=30).map(
    lambda parts: "".join(piece + end for piece, end in parts))
_LINES = st.lists(st.sampled_from([*"ab0:/.-_[] \t\u00a0\u2028", "error", "found", "password", "[--opt X]",
                                   "OpenSSH 9.2p1", "10.0.0.5:445"]), max_size=40).map("".join)


def _strip_every_block(text: str) -> str:
    for pattern in entries._BLOCK_RES.values():
        text = pattern.sub("", text)
    return text


def test_each_block_is_looked_for_by_the_tag_it_opens_with():
    for key, pattern in entries._BLOCK_RES.items():
        opener = entries._BLOCK_OPENERS[key]
        assert pattern.pattern.startswith("^" + opener + "\\n"), key


@given(_PROMPTS)
def test_skipping_absent_blocks_strips_what_scanning_for_every_block_strips(prompt):
    assert entries._strip_blocks(prompt) == _strip_every_block(prompt)
    assert entries.outside_text(prompt) == _strip_every_block(entries._INSTRUCTIONS_RE.sub("", prompt))


@given(_PROMPTS)
def test_a_block_is_found_exactly_where_a_full_scan_finds_it(prompt):
    for key, pattern in entries._BLOCK_RES.items():
        assert [m.span() for m in entries._blocks(key, prompt)] == [m.span() for m in pattern.finditer(prompt)]
        first = entries._first_block(key, prompt)
        full = pattern.search(prompt)
        assert (first.span() if first else None) == (full.span() if full else None)


@given(st.text())
def test_squashing_whitespace_equals_the_regex_it_replaced(line):
    assert facts.squash(line) == re.sub(r"\s+", " ", line).strip()


@given(_LINES)
def test_remembered_line_answers_are_the_computed_ones(line):
    for _ in range(2):  # the second call is answered from the cache
        assert facts.score(line) == facts._score(line)
        assert facts.is_error(line) == facts._is_error(line)
        assert facts.is_strong(line) == facts._is_strong(line)


def test_a_long_line_is_classified_without_being_remembered(monkeypatch):
    remembered: list[str] = []
    for name in ("_line_score", "_line_is_error", "_line_is_strong"):
        cached = getattr(facts, name)
        monkeypatch.setattr(facts, name, lambda line, cached=cached: remembered.append(line) or cached(line))
    long_line = "error: " + "x " * facts.CACHED_LINE_CHARS
    assert facts.score(long_line) == facts._score(long_line) and facts.is_error(long_line)
    assert facts.is_strong(long_line) == facts._is_strong(long_line)
    assert remembered == []
    assert facts.score("error: short") == facts._score("error: short")
    assert remembered and set(remembered) == {"error: short"}  # a short line is remembered


# Lines made of what the name patterns look for and what their skip tests look at (the one-character marks a
# pattern needs, labels, host words, names with and without them) and of characters regexes fold by case.
_NAME_LINES = st.lists(st.sampled_from([
    "ESSOS\\missandei", "essos.local", "dc01.essos.local", "jon@north.local", "MEEREEN$", "ESSOS-CA", "corp-DC01-CA",
    "user", "Username", "host", "hostname", "server", "CA Name", "(name", "domain", ":", "=", "..", ".", " ", "\\",
    "@", "$", "-", "-ca", "WEB01", "sql_svc", "10.0.0.5", "\u017f", "\u0131", "\u212a", "K", "\t", "`"]),
    max_size=24).map("".join)


def _names_by_every_pattern(line: str) -> tuple[str, ...]:
    found = [(m.start(), m.group(0)) for _, pattern in identifiers._NAME_PATTERNS for m in pattern.finditer(line)]
    for labelled in (identifiers._LABELLED_NAME_RE, identifiers._HOST_WORD_RE):
        found.extend((m.start("value"), m.group("value").rstrip(".-")) for m in labelled.finditer(line))
    return tuple(n for _, n in sorted(found) if identifiers._is_name(n))


@given(_NAME_LINES)
def test_a_name_pattern_skipped_for_a_missing_mark_would_have_found_nothing(line):
    assert identifiers._line_names.__wrapped__(line) == _names_by_every_pattern(line)


@given(st.text())
def test_names_of_any_text_are_those_every_pattern_finds(line):
    assert identifiers._line_names.__wrapped__(line) == _names_by_every_pattern(line)
