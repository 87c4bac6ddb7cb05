"""Parsing a flat chain into the AST (PentAGI `NewChainAST`), with strict and force (auto-repair) modes.

Strict parsing rejects anything PentAGI would reject. Force parsing repairs what PentAGI repairs: merges
double human messages, drops stray tool messages, answers pending calls and invents calls for unmatched
results. Sizes of repaired pairs are computed fresh from the repaired messages (Resolution 5).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from summarizer.chain.messages import valid_calls, validate_messages
from summarizer.chain.nodes import (
    COMPLETION,
    PAIR_KINDS,
    REQUEST_RESPONSE,
    SUMMARIZATION,
    SUMMARIZATION_TOOL,
    SUMMARY_PREFIX,
    BodyPair,
    ChainAST,
    ChainError,
    Header,
    Lineage,
    Section,
    is_summarized_content,
    merge_lineage,
    pair_kind,
)

__all__ = [
    "parse_chain", "body_pair_from_messages", "check_invariants", "drop_null_calls", "human_parts",
    "merge_humans", "UNHANDLED_CALL_TEXT", "ChainAST", "Section", "Header", "BodyPair", "ChainError",
    "COMPLETION", "REQUEST_RESPONSE", "SUMMARIZATION", "PAIR_KINDS", "SUMMARIZATION_TOOL", "SUMMARY_PREFIX",
    "is_summarized_content",
]

UNHANDLED_CALL_TEXT = "the call was not handled, please try again"
Message = dict[str, Any]


def drop_null_calls(ai: Message) -> Message:
    """Remove tool calls without a function that come before the first real call (PentAGI's scan order)."""
    calls = ai.get("tool_calls")
    if not calls:
        return ai
    first_real = next((i for i, call in enumerate(calls) if call.get("function") is not None), len(calls))
    if first_real == 0:
        return ai
    kept = calls[first_real:]
    out = {k: v for k, v in ai.items() if k != "tool_calls"}
    if kept:
        out["tool_calls"] = kept
    return out


def human_parts(msg: Message) -> list[dict[str, Any]]:
    content = msg.get("content")
    if isinstance(content, list):
        return list(content)
    if content is None:
        return []
    return [{"type": "text", "text": content}]


def merge_humans(first: Message, extra_parts: list[dict[str, Any]]) -> Message:
    """Two user messages in a row become one whose content is a list of parts (Resolution 8)."""
    merged = dict(first)
    merged["content"] = human_parts(first) + extra_parts
    return merged


@dataclass
class _Draft:
    """A body pair under construction while the parser walks the chain."""

    ai: Message
    ai_lineage: Lineage
    tools: list[Message] = field(default_factory=list)
    tool_lineage: list[Lineage] = field(default_factory=list)

    @property
    def kind(self) -> str:
        return pair_kind(self.ai)

    def build(self) -> BodyPair:
        return BodyPair(self.ai, tuple(self.tools), (self.ai_lineage, *self.tool_lineage))


@dataclass
class _SectionDraft:
    system: Message | None = None
    human: Message | None = None
    system_lineage: Lineage = ()
    human_lineage: Lineage = ()
    pairs: list[_Draft] = field(default_factory=list)
    # Later user messages of a run (force mode), merged once in build(): merging on every message was
    # O(n^2) in the run's length (each merge copied all parts and re-sorted all lineage so far).
    more_humans: list[Message] = field(default_factory=list)
    more_human_lineages: list[Lineage] = field(default_factory=list)

    def build(self) -> Section:
        human, human_lineage = self.human, self.human_lineage
        if human is not None and self.more_humans:
            human = merge_humans(human, [part for msg in self.more_humans for part in human_parts(msg)])
            human_lineage = merge_lineage(human_lineage, *self.more_human_lineages)
        header = Header(self.system, human, self.system_lineage, human_lineage)
        return Section(header, [p.build() for p in self.pairs])


def _check_pending(pair: _Draft | None, force: bool, index: int) -> None:
    if pair is None or pair.kind == COMPLETION:
        return
    answered = {t["tool_call_id"] for t in pair.tools}
    names = {c["id"]: c["function"]["name"] for c in valid_calls(pair.ai)}
    pending = sorted(i for i in names if i not in answered)
    if not pending:
        return
    if not force:
        raise ChainError(f"tool calls without a response: {', '.join(pending)}", index)
    for call_id in pending:
        pair.tools.append({"role": "tool", "tool_call_id": call_id, "name": names[call_id],
                           "content": UNHANDLED_CALL_TEXT})
        pair.tool_lineage.append(pair.ai_lineage)


def _check_unmatched(pair: _Draft, force: bool, index: int) -> None:
    calls = {c["id"] for c in valid_calls(pair.ai)}
    unmatched = sorted({t["tool_call_id"] for t in pair.tools if t["tool_call_id"] not in calls})
    if not unmatched:
        return
    if not force:
        raise ChainError(f"tool responses without a call: {', '.join(unmatched)}", index)
    names = {t["tool_call_id"]: t.get("name") or "" for t in pair.tools}
    ai = dict(pair.ai)
    ai["tool_calls"] = list(ai.get("tool_calls") or []) + [
        {"id": i, "type": "function", "function": {"name": names[i], "arguments": "{}"}} for i in unmatched]
    pair.ai = ai


class _Parser:
    def __init__(self, force: bool) -> None:
        self.force = force
        self.sections: list[_SectionDraft] = []
        self.pair: _Draft | None = None

    @property
    def cur(self) -> _SectionDraft | None:
        return self.sections[-1] if self.sections else None

    def system(self, msg: Message, lin: Lineage, index: int) -> None:
        if self.sections:
            raise ChainError("system message in the middle of the chain", index)
        self.sections.append(_SectionDraft(system=msg, system_lineage=lin))

    def human(self, msg: Message, lin: Lineage, index: int) -> None:
        cur = self.cur
        if cur is None:
            self.sections.append(_SectionDraft(human=msg, human_lineage=lin))
        elif cur.human is not None and not cur.pairs:
            if not self.force:
                raise ChainError("two user messages in a row", index)
            cur.more_humans.append(msg)
            cur.more_human_lineages.append(lin)
        elif cur.human is not None:
            self.sections.append(_SectionDraft(human=msg, human_lineage=lin))
            _check_pending(self.pair, self.force, index)
            self.pair = None
        else:
            if cur.pairs and not self.force:
                raise ChainError("user message after AI messages of a system-only section", index)
            cur.human, cur.human_lineage = msg, lin

    def ai(self, msg: Message, lin: Lineage, index: int) -> None:
        if self.cur is None:
            raise ChainError("assistant message before any section", index)
        _check_pending(self.pair, self.force, index)
        self.pair = _Draft(drop_null_calls(msg), lin)
        self.cur.pairs.append(self.pair)

    def tool(self, msg: Message, lin: Lineage, index: int) -> None:
        if self.cur is None:
            raise ChainError("tool message before any section", index)
        if self.pair is None or self.pair.kind == COMPLETION:
            if not self.force:
                raise ChainError("tool message without a preceding tool call", index)
            return
        self.pair.tools.append(msg)
        self.pair.tool_lineage.append(lin)
        _check_unmatched(self.pair, self.force, index)


def parse_chain(messages: Sequence[Message], *, force: bool = False,
                lineage: Sequence[Sequence[int]] | None = None) -> ChainAST:
    """Parse a chain; `lineage` optionally gives, per message, the indices it stands for (default: itself)."""
    validate_messages(list(messages) if not isinstance(messages, list) else messages)
    if lineage is not None and len(lineage) != len(messages):
        raise ValueError("lineage must have one entry per message")
    if not messages:
        return ChainAST([])
    if messages[0]["role"] not in ("system", "user"):
        raise ChainError("the first message must be a system or user message", 0)
    parser = _Parser(force)
    handlers = {"system": parser.system, "user": parser.human, "assistant": parser.ai, "tool": parser.tool}
    for index, msg in enumerate(messages):
        lin = tuple(sorted(set(lineage[index]))) if lineage is not None else (index,)
        handlers[msg["role"]](msg, lin, index)
    _check_pending(parser.pair, force, len(messages))
    return ChainAST([s.build() for s in parser.sections])


def body_pair_from_messages(messages: Sequence[Message]) -> BodyPair:
    """PentAGI's pair constructor: one assistant message then only tool messages; kind decided by parts."""
    if not messages:
        raise ChainError("a body pair needs at least one message")
    validate_messages(list(messages))
    if messages[0]["role"] != "assistant":
        raise ChainError("a body pair must start with an assistant message", 0)
    for index, msg in enumerate(messages[1:], start=1):
        if msg["role"] != "tool":
            raise ChainError("only tool messages may follow the assistant message of a pair", index)
    return BodyPair(drop_null_calls(messages[0]), tuple(messages[1:]))


def _check_section(i: int, sec: Section, last: bool) -> list[str]:
    problems: list[str] = []
    if i == 0 and sec.header.system is None and sec.header.human is None:
        problems.append("section 0 has neither system nor user message")
    if i > 0 and (sec.header.human is None or sec.header.system is not None):
        problems.append(f"section {i} must have a user message and no system message")
    if not last and not sec.body:
        problems.append(f"section {i} is not the last one but has no body")
    for j, pair in enumerate(sec.body):
        calls = len(valid_calls(pair.ai))
        if pair.kind == COMPLETION and (calls or pair.tools):
            problems.append(f"section {i} pair {j}: completion with tool activity")
        if pair.kind != COMPLETION and calls != len(pair.tools):
            problems.append(f"section {i} pair {j}: {calls} calls but {len(pair.tools)} responses")
        if not pair.is_valid():
            problems.append(f"section {i} pair {j}: invalid {pair.kind} pair")
    return problems


def check_invariants(ast: ChainAST) -> list[str]:
    """PentAGI's verifyASTConsistency: empty list when the AST is sound, else one line per problem."""
    problems: list[str] = []
    for i, sec in enumerate(ast.sections):
        problems.extend(_check_section(i, sec, i == len(ast.sections) - 1))
    if ast.size != sum(s.size for s in ast.sections):
        problems.append("AST size differs from the sum of section sizes")
    messages = ast.to_messages()
    try:
        again = parse_chain(messages)
    except (ChainError, ValueError) as exc:
        problems.append(f"output does not re-parse strictly: {exc}")
    else:
        if again.to_messages() != messages:
            problems.append("round trip is not lossless")
    return problems
