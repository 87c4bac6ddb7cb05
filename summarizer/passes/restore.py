"""PentAGI's two chain re-use paths (§2.1): restoring a chain for a new task and switching provider.

Both make a stored chain acceptable to whichever provider reads it next: tool-call ids in that provider's
form, arguments that are valid JSON, and no reasoning signatures (they only validate with their author).
"""
from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from summarizer.chain.nodes import ChainAST, Header
from summarizer.chain.ops import append_human, clear_reasoning, normalize_tool_call_ids, sanitize_tool_call_arguments
from summarizer.chain.parse import parse_chain
from summarizer.chain.toolcall_ids import detect_id_template
from summarizer.passes.summarize import SummarizeResult, summarize_chain
from summarizer.settings.config import SummarizerConfig

__all__ = ["CONTINUE_TEXT", "restore_chain", "prepare_provider_switch"]

CONTINUE_TEXT = "Continue from where we left off"
Message = dict[str, Any]


def _normalized(ast: ChainAST, id_template: str, rng: random.Random | None) -> list[Message]:
    normalize_tool_call_ids(ast, id_template, rng)
    sanitize_tool_call_arguments(ast)
    return clear_reasoning(ast.to_messages())


def _drop_unanswered_question(ast: ChainAST) -> None:
    """A last section without a body holds a question nobody answered: drop it, the new task replaces it.

    PentAGI also drops a last tool-call pair without results, but after force parsing every call has a
    result ("the call was not handled, please try again"), so that case cannot occur here either.
    """
    last = ast.sections[-1] if ast.sections else None
    if last is None or last.body:
        return
    last.header = Header(last.header.system, None, last.header.system_lineage, ())
    if last.header.system is None:
        ast.sections.pop()


def restore_chain(messages: list[Message], *, system_prompt: str, human_prompt: str,
                  summarize: Callable[[str], str], id_template: str | None = None,
                  rng: random.Random | None = None) -> SummarizeResult:
    """PentAGI restoreChain: fresh system prompt, new task as a new section, normalized, then summarized
    with the restore profile. Summarization failure keeps the normalized chain (with `.error`); any
    other failure gives a fresh [system, user] chain. New messages have an empty lineage."""
    template = id_template or detect_id_template(messages)
    fresh = [{"role": "system", "content": system_prompt}, {"role": "user", "content": human_prompt}]
    try:
        ast = parse_chain(messages, force=True)
        _drop_unanswered_question(ast)
        if not ast.sections:  # nothing worth restoring
            return SummarizeResult(fresh, 0, [[], []], {})
        first = ast.sections[0].header
        ast.sections[0].header = Header(fresh[0], first.human, (), first.human_lineage)
        append_human(ast, human_prompt)
        normalized = _normalized(ast, template, rng)
        lineage = ast.lineage()
    except (ValueError, TypeError) as exc:
        return SummarizeResult(fresh, 0, [[], []], {}, error=f"{type(exc).__name__}: {exc}")
    return summarize_chain(normalized, SummarizerConfig.restore(), summarize, id_template=template,
                           lineage_in=lineage, rng=rng)


def prepare_provider_switch(messages: list[Message], *, id_template: str,
                            rng: random.Random | None = None) -> list[Message]:
    """PentAGI processChain on a model/provider change: normalize, sanitize, clear reasoning, and make sure
    the chain ends with a user message. No summarization."""
    ast = parse_chain(messages, force=True)
    out = _normalized(ast, id_template, rng)
    if out and out[-1]["role"] != "user":
        out.append({"role": "user", "content": CONTINUE_TEXT})
    return out
