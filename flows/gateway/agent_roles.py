"""Which PentAGI agent sent a request, told from how its system prompt opens (pure: no database, no Django).

PentAGI gives each agent type its own system prompt template, and each template opens with a markdown title
naming the agent's role (vxcontrol/pentagi, backend/pkg/templates/prompts/). The title is the part of the
prompt that stays put while the rest is filled in per flow (tools, dates, the task), so the recognition reads
only the title: the first line of the first system message, when it is a markdown heading. Each rule names
word stems of that title; the first rule whose stems all start a word of it wins. The order matters where
titles share a word (the assistant's title also names penetration testing).
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

__all__ = ["ROLE_RULES", "prompt_title", "agent_type_from_title", "recognise_agent_type"]

TITLE_SCAN_CHARS = 400  # the title is the prompt's first line; never scan a whole 50 KB prompt for it
_WORD = re.compile(r"[a-z]+")

# (agent type, the stems that must all start a word of the title). Our own reading of the role each
# template's title names, not its wording: the stems are the role's nouns.
ROLE_RULES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("assistant", ("assistant",)),
    ("primary_agent", ("orchestrat",)),
    ("tool_call_fixer", ("repair",)),
    ("summarizer", ("summari",)),
    ("reflector", ("enforc",)),
    ("enricher", ("enrich",)),
    ("memorist", ("memory",)),
    ("reporter", ("report",)),
    ("generator", ("subtask", "generat")),
    ("refiner", ("plan", "optimi")),
    ("adviser", ("solution", "expert")),
    ("adviser", ("advis",)),
    ("searcher", ("retriev",)),
    ("searcher", ("search",)),
    ("installer", ("infrastructure",)),
    ("installer", ("install",)),
    ("coder", ("code",)),
    ("coder", ("develop",)),
    ("pentester", ("penetration",)),
    ("pentester", ("pentest",)),
)


def _text(content: Any) -> str:
    """A message's text: the string itself, or the text of its first text part."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                return part["text"]
    return ""


def prompt_title(messages: Sequence[dict[str, Any]]) -> str:
    """The markdown title the first system (or developer) message opens with; "" when it opens otherwise."""
    for message in messages:
        if message.get("role") in ("system", "developer"):
            opening = _text(message.get("content")).lstrip()[:TITLE_SCAN_CHARS]
            first_line = opening.split("\n", 1)[0].strip()
            return first_line.lstrip("#").strip() if first_line.startswith("#") else ""
        if message.get("role") != "system":
            return ""  # the system prompt comes first or not at all
    return ""


def agent_type_from_title(title: str) -> str | None:
    words = _WORD.findall(title.lower())
    for agent_type, stems in ROLE_RULES:
        if all(any(word.startswith(stem) for word in words) for stem in stems):
            return agent_type
    return None


def recognise_agent_type(messages: Sequence[dict[str, Any]]) -> str | None:
    """The PentAGI agent type whose prompt the request's system message opens like; None when none does."""
    title = prompt_title(messages)
    return agent_type_from_title(title) if title else None
