"""System prompts sent with every summary request (our own wording of PentAGI's summarizer.tmpl intent).

The texts live in the engine (`summarizer.SUMMARY_SYSTEM_PROMPT`, `summarizer.COMPACTION_SYSTEM_PROMPT`, taken
through flows.engine), so the app and the engine's CLI send the same summary prompt; this module picks one per
purpose. They are constant on purpose: providers cache a stable prompt prefix, and our own summary cache keys on
the user text only, which is only sound while the system prompt cannot change between calls.
"""
from __future__ import annotations

from flows.engine import COMPACTION_SYSTEM_PROMPT, SUMMARY_SYSTEM_PROMPT

__all__ = ["SUMMARY_SYSTEM_PROMPT", "COMPACTION_SYSTEM_PROMPT", "system_prompt_for"]

_PROMPTS = {"summary": SUMMARY_SYSTEM_PROMPT, "compaction": COMPACTION_SYSTEM_PROMPT}


def system_prompt_for(purpose: str) -> str:
    try:
        return _PROMPTS[purpose]
    except KeyError:
        raise ValueError(f"unknown purpose {purpose!r}: expected one of {sorted(_PROMPTS)}") from None
