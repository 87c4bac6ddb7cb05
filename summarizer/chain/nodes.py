"""Nodes of the chain AST (PentAGI `cast`): sections, headers and body pairs, with sizes fixed at build time.

Nodes never mutate the message dicts they hold; every repair or summary builds new dicts. That is what
lets the parser skip copying its input and still give an exact round trip.
Each node also carries lineage: per message, the sorted input indices that message stands for.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from summarizer.chain.messages import call_names, clone, message_size, valid_calls

__all__ = [
    "SUMMARIZATION_TOOL", "SUMMARY_PREFIX", "COMPLETION", "REQUEST_RESPONSE", "SUMMARIZATION", "PAIR_KINDS",
    "Lineage", "Header", "BodyPair", "Section", "ChainAST", "pair_kind", "is_summarized_content",
    "merge_lineage", "ChainError",
]

SUMMARIZATION_TOOL = "execute_task_and_return_summary"
SUMMARY_PREFIX = "**summarized content:**\n"
COMPLETION, REQUEST_RESPONSE, SUMMARIZATION = "completion", "request_response", "summarization"
PAIR_KINDS = (COMPLETION, REQUEST_RESPONSE, SUMMARIZATION)

Message = dict[str, Any]
Lineage = tuple[int, ...]


class ChainError(ValueError):
    """The chain's structure cannot be parsed (message order, pairing of tool calls)."""

    def __init__(self, reason: str, index: int | None = None) -> None:
        super().__init__(reason if index is None else f"message {index}: {reason}")
        self.index, self.reason = index, reason


def merge_lineage(*lineages: Iterable[int]) -> Lineage:
    """The sorted union of input indices (or raw seqs) several messages stand for: the one lineage merge."""
    return tuple(sorted(set().union(*lineages)))


def pair_kind(ai: Message) -> str:
    """The first tool call with a function decides; no such call means a completion (parts only)."""
    for call in ai.get("tool_calls") or ():
        if call.get("function") is not None:
            return SUMMARIZATION if call["function"]["name"] == SUMMARIZATION_TOOL else REQUEST_RESPONSE
    return COMPLETION


def _first_text(ai: Message) -> str | None:
    content = ai.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list) and content and content[0].get("type") == "text":
        text: str | None = content[0]["text"]
        return text
    return None


@dataclass(frozen=True)
class Header:
    """Optional system message + optional human (user) message of a section."""

    system: Message | None = None
    human: Message | None = None
    system_lineage: Lineage = ()
    human_lineage: Lineage = ()
    size: int = field(init=False, compare=False)

    def __post_init__(self) -> None:
        size = sum(message_size(m) for m in (self.system, self.human) if m is not None)
        object.__setattr__(self, "size", size)

    def messages(self) -> list[Message]:
        return [m for m in (self.system, self.human) if m is not None]

    def lineages(self) -> list[Lineage]:
        pairs = ((self.system, self.system_lineage), (self.human, self.human_lineage))
        return [lin for m, lin in pairs if m is not None]


@dataclass(frozen=True)
class BodyPair:
    """One AI message and the tool messages answering its calls."""

    ai: Message
    tools: tuple[Message, ...] = ()
    lineage: tuple[Lineage, ...] = ()
    kind: str = field(init=False)
    size: int = field(init=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "tools", tuple(self.tools))
        if not self.lineage:
            object.__setattr__(self, "lineage", tuple(() for _ in range(1 + len(self.tools))))
        elif len(self.lineage) != 1 + len(self.tools):
            raise ValueError("a body pair needs one lineage entry per message")
        names = call_names([self.ai])
        size = message_size(self.ai) + sum(message_size(t, names) for t in self.tools)
        object.__setattr__(self, "kind", pair_kind(self.ai))
        object.__setattr__(self, "size", size)

    def messages(self) -> list[Message]:
        return [self.ai, *self.tools]

    def call_ids(self) -> list[str]:
        return [c["id"] for c in valid_calls(self.ai)]

    def response_ids(self) -> list[str]:
        return [t["tool_call_id"] for t in self.tools]

    def pending_ids(self) -> list[str]:
        answered = set(self.response_ids())
        return sorted({i for i in self.call_ids() if i not in answered})

    def unmatched_ids(self) -> list[str]:
        calls = set(self.call_ids())
        return sorted({i for i in self.response_ids() if i not in calls})

    @property
    def is_summary(self) -> bool:
        return is_summarized_content(self)

    def is_valid(self) -> bool:
        """PentAGI's pair validity: tool-message count fits the kind and every call is paired."""
        if self.kind == COMPLETION and self.tools:
            return False
        if self.kind == REQUEST_RESPONSE and not self.tools:
            return False
        if self.kind == SUMMARIZATION and len(self.tools) != 1:
            return False
        return not self.pending_ids() and not self.unmatched_ids()

    def all_lineage(self) -> Lineage:
        return merge_lineage(*self.lineage)


def is_summarized_content(pair: BodyPair) -> bool:
    """A Summarization pair, or a Completion whose first part starts with the summary prefix."""
    if pair.kind == SUMMARIZATION:
        return True
    if pair.kind != COMPLETION:
        return False
    text = _first_text(pair.ai)
    return text is not None and text.startswith(SUMMARY_PREFIX)


@dataclass
class Section:
    """One turn: a header and the AI activity answering it."""

    header: Header
    body: list[BodyPair] = field(default_factory=list)

    @property
    def size(self) -> int:
        return self.header.size + sum(p.size for p in self.body)

    def messages(self) -> list[Message]:
        out = self.header.messages()
        for pair in self.body:
            out.extend(pair.messages())
        return out

    def lineages(self) -> list[Lineage]:
        out = self.header.lineages()
        for pair in self.body:
            out.extend(pair.lineage)
        return out

    def body_messages(self) -> list[Message]:
        return [m for p in self.body for m in p.messages()]

    def body_lineage(self) -> Lineage:
        return merge_lineage(*(p.all_lineage() for p in self.body))


@dataclass
class ChainAST:
    """The parsed chain. `to_messages()` renders it back; for an unrepaired input it equals the input."""

    sections: list[Section] = field(default_factory=list)

    @property
    def size(self) -> int:
        return sum(s.size for s in self.sections)

    def to_messages(self) -> list[Message]:
        return [clone(m) for s in self.sections for m in s.messages()]

    def lineage(self) -> list[list[int]]:
        return [list(lin) for s in self.sections for lin in s.lineages()]

    def message_count(self) -> int:
        return sum(len(s.messages()) for s in self.sections)
