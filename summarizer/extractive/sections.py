"""The briefing's sections, and reading an earlier summary back into them.

A summary that is summarized again must merge into the new one (one Findings section, never an "Earlier
summaries" block holding its own headings), so its title and heading lines are recognised here and its lines
routed to the group they were written under. Titles of the older layout ("Requests:", "Actions and results:",
"Earlier summaries:") are understood too, so chains summarized before this layout merge as well.
"""
from __future__ import annotations

import re

__all__ = ["BRIEFING_TITLES", "BRIEFING_ORDER", "IDENTIFIERS_LABEL", "NOISE_LABEL", "LEDGER_TITLE", "TASK_LABEL",
           "ASK_LABEL", "STEP_LABEL", "heading_group", "title_group", "is_identifier_list", "NOT_A_TITLE"]

BRIEFING_TITLES = {"goal": "Task and current goal:", "done": "Done:", "critical": "Findings:",
                   "blocked": "Negative results and dead ends:", "next": "Open leads / next steps:"}
BRIEFING_ORDER = ("goal", "done", "critical", "blocked", "next")
IDENTIFIERS_LABEL = "Identifiers:"
NOISE_LABEL = "- also in tool output: "  # a checkpoint's noise, listed last on one line
LEDGER_TITLE = "Ledger (audited findings and identifiers):"  # summarizer.extractive.ledger appends it to LLM summaries
TASK_LABEL = "- Task: "
ASK_LABEL = "- Latest ask: "
STEP_LABEL = "- Current step: "
NOT_A_TITLE = "not-a-title"

# Heading keywords of the compaction checkpoint (and the briefing) and the group each selects.
_HEADING_GROUPS = [("identifier", "ids"), ("goal", "goal"), ("original request", "goal"), ("ask", "goal"),
                   ("task", "goal"), ("constraint", "constraints"), ("rule", "constraints"),
                   ("in progress", "current"), ("blocked", "blocked"), ("negative", "blocked"),
                   ("dead end", "blocked"), ("done", "done"), ("early progress", "done"), ("progress", "done"),
                   ("decision", "decisions"), ("next", "next"), ("open lead", "next"), ("todo", "next"),
                   ("finding", "critical"), ("critical", "critical"), ("context", "critical")]
_LEGACY_TITLES = {"earlier summaries:": None, "requests:": "goal", "actions and results:": "done",
                  "assistant notes:": "critical", "notes:": "critical"}
_TITLES = {title.lower(): group for group, title in BRIEFING_TITLES.items()} | {LEDGER_TITLE.lower(): "critical"}
_IDS_LINE_RE = re.compile(r"^(?:- )?(?:Identifiers:|\(\+\d+ more identifiers omitted for space\))")


def heading_group(heading: str) -> str | None:
    """The group a Markdown heading (or a briefing title) selects by its keywords, None when none matches."""
    low = heading.lstrip("#").strip().lower()
    return next((group for keyword, group in _HEADING_GROUPS if keyword in low), None)


def title_group(line: str) -> str | None:
    """For a title or heading line of an earlier summary, the group it opens (None: a container such as
    "Earlier summaries:", whose lines keep the group they had); NOT_A_TITLE for a content line.

    A bulleted title ("- Requests:", what the older layout nested) counts as a title too: that nesting is
    exactly what merging must undo."""
    bare = line.strip()
    bare = bare[2:].strip() if bare.startswith("- ") else bare
    low = bare.lower()
    if low in _TITLES:
        return _TITLES[low]
    if low in _LEGACY_TITLES:
        return _LEGACY_TITLES[low]
    if bare.startswith("#"):
        return "critical" if low.lstrip("# ") + ":" == LEDGER_TITLE.lower() else heading_group(bare)
    return NOT_A_TITLE


def is_identifier_list(line: str) -> bool:
    """An earlier summary's identifier list: its identifiers are read again from the text, the line is not."""
    return bool(_IDS_LINE_RE.match(line.strip()))
