"""The three summarization passes of PentAGI's csum, as sans-IO generators.

Theory of operation
-------------------
A chain is a list of sections (one per user turn); each section is a header (system?/user?) and body pairs
(one AI message + the tool messages answering it). Sizes are UTF-8 bytes. After every agent tool round:

  A. Every section older than the newest `keep` sections is condensed to ONE summary pair (concurrently),
     unless it already is a single summary pair or has no body.
  B. (preserve_last) Each of the newest `keep` sections, newest first, is rotated: first every pair except
     the last one that is larger than `max_bp_bytes` is summarized alone (concurrently, failures ignored);
     then, if the section is still above `last_sec_bytes`, the newest pairs that fit in the threshold
     (limit minus a 25 % reserve, so the next rotation is delayed) are kept and the older prefix becomes
     one summary pair at the top of the section. The last pair is never touched: it holds the current
     step, including provider reasoning signatures.
  C. (use_qa) When there are too many sections or bytes, the oldest sections are collapsed into a single
     first section: a user message (verbatim concatenation or its own summary) and one summary pair; the
     system message stays in front.

Tool activity is always replaced by a fake `execute_task_and_return_summary` call/result pair and plain
text by a "**summarized content:**" answer, so summaries nest: later passes feed earlier summaries back
to the LLM, which is told to keep them.

The passes decide; they never call the LLM. Each pass is a generator that yields a `Batch` of prompts
(one stage letter, prompts meant to run concurrently) and receives a list of outcomes, each a summary
string or the exception raised for that prompt. `summarize.py` drives them synchronously or with asyncio.
The split/keep arithmetic is in pure functions (`last_section_split`, `recent_sections_to_keep`).
"""
from __future__ import annotations

import json
import random
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import Any

from summarizer.chain.nodes import (
    REQUEST_RESPONSE,
    SUMMARIZATION,
    SUMMARIZATION_TOOL,
    BodyPair,
    ChainAST,
    Header,
    Section,
    merge_lineage,
)
from summarizer.chain.ops import contains_tool_call_reasoning, extract_reasoning_message
from summarizer.chain.parse import human_parts
from summarizer.chain.toolcall_ids import content_rng, generate_id
from summarizer.passes.prompts import build_summary_prompt
from summarizer.passes.shapes import prefixed_completion, summarization_pair
from summarizer.settings.config import SummarizerConfig

__all__ = [
    "Batch", "Outcome", "PassGen", "StageError", "PassContext", "QA_BYTES_MARGIN", "last_section_split",
    "recent_sections_to_keep", "size_words", "stage_a", "stage_b", "rotate_section", "stage_c", "run_passes",
]

QA_BYTES_MARGIN = 1000  # PentAGI keeps QA sections within max_qa_bytes minus this many bytes
Outcome = Any  # str summary or the BaseException raised for that prompt
Message = dict[str, Any]


@dataclass(frozen=True)
class Batch:
    stage: str
    prompts: tuple[str, ...]


PassGen = Generator[Batch, list[Outcome], None]


class StageError(RuntimeError):
    """A summary that the chain depends on could not be produced; the caller keeps the original chain."""


PromptBuilder = Callable[[Sequence[Message], Sequence[Message]], str]


@dataclass
class PassContext:
    """What one run shares across its passes. `build_prompt(humans, messages)` writes a summary prompt:
    PentAGI's own by default; the window strategy passes one that bounds what the summarizer is sent."""

    id_template: str
    rng: random.Random | None = None
    ignored_failures: list[str] = field(default_factory=list)
    issued_ids: set[str] = field(default_factory=set)
    build_prompt: PromptBuilder = build_summary_prompt
    reasons: list[str] = field(default_factory=list)  # why each batch was asked for, in words and numbers

    def summary_call_id(self, text: str, replaced: Sequence[Message]) -> str:
        """A summary call id: from `rng` when one is given, else derived from the summary and what it replaces,
        so the same chain and settings give byte-identical views; never one already issued in this run."""
        source = self.rng if self.rng is not None else content_rng(
            text, json.dumps(replaced, sort_keys=True, ensure_ascii=False, default=str))
        call_id = generate_id(self.id_template, SUMMARIZATION_TOOL, source)
        while call_id in self.issued_ids:
            call_id = generate_id(self.id_template, SUMMARIZATION_TOOL, source)
        self.issued_ids.add(call_id)
        return call_id


def size_words(n: int) -> str:
    """Bytes as a person reads them: "812 B", "54.3 KB", "1.2 MB"."""
    if n < 1024:
        return f"{n:,} B"
    return f"{n / 1024:.1f} KB" if n < 1024 * 1024 else f"{n / (1024 * 1024):.1f} MB"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _failed(outcome: Outcome) -> bool:
    return isinstance(outcome, BaseException) or not isinstance(outcome, str)


def _reason(outcome: Outcome) -> str:
    if isinstance(outcome, BaseException):
        return f"{type(outcome).__name__}: {outcome}"
    return f"summarizer returned {type(outcome).__name__}, not text"


def _has_tool_activity(pairs: Sequence[BodyPair]) -> bool:
    return any(p.kind in (REQUEST_RESPONSE, SUMMARIZATION) for p in pairs)


def _summary_pair(pairs: Sequence[BodyPair], text: str, ctx: PassContext, *, keep_reasoning: bool) -> BodyPair:
    """Replace `pairs` by one summary whose shape follows what they contained (Appendix B)."""
    lineage = merge_lineage(*(p.all_lineage() for p in pairs))
    if not _has_tool_activity(pairs):
        return prefixed_completion(text, lineage=lineage)
    messages = [m for p in pairs for m in p.messages()]
    signed = keep_reasoning and contains_tool_call_reasoning(messages)
    reasoning = extract_reasoning_message(messages) if keep_reasoning else None
    return summarization_pair(text, id_template=ctx.id_template, call_id=ctx.summary_call_id(text, messages),
                              fake_signature=signed, reasoning_message=reasoning, lineage=lineage)


def _humans(section: Section) -> list[Message]:
    return [section.header.human] if section.header.human is not None else []


def _prompt(section: Section, messages: list[Message], ctx: PassContext) -> str:
    return ctx.build_prompt(_humans(section), messages)


# ---------------------------------------------------------------- Stage A
def stage_a(ast: ChainAST, keep: int, ctx: PassContext) -> PassGen:
    jobs = [i for i, sec in enumerate(ast.sections[:max(len(ast.sections) - keep, 0)])
            if sec.body and not (len(sec.body) == 1 and sec.body[0].is_summary)]
    if not jobs:
        return
    ctx.reasons.append(f"sections {len(ast.sections)} > keep_qa_sections {keep}: "
                       f"{_plural(len(jobs), 'older section')} condensed to one summary each")
    outcomes = yield Batch("a", tuple(_prompt(ast.sections[i], ast.sections[i].body_messages(), ctx) for i in jobs))
    failures = [_reason(o) for o in outcomes if _failed(o)]
    if failures:
        raise StageError(f"summary generation failed: {'; '.join(failures)}")
    for i, text in zip(jobs, outcomes, strict=False):
        sec = ast.sections[i]
        sec.body = [_summary_pair(sec.body, text, ctx, keep_reasoning=False)]


# ---------------------------------------------------------------- Stage B
def last_section_split(header_size: int, pair_sizes: Sequence[int], pair_kinds: Sequence[str],
                       max_bytes: int, reserve_percent: int) -> int:
    """How many of the oldest pairs to fold into one summary (PentAGI determineLastSectionPairs)."""
    if not pair_sizes:
        return 0
    threshold = max_bytes * (100 - reserve_percent) // 100
    used = header_size + pair_sizes[-1]
    border = -1
    for j in range(len(pair_sizes) - 2, -1, -1):
        if used + pair_sizes[j] > threshold:
            border = j
            break
        used += pair_sizes[j]
    old = border + 1
    if old == 0 or used + sum(pair_sizes[:old]) <= max_bytes:
        return 0
    if old == 1 and pair_kinds[0] == SUMMARIZATION:
        return 0
    return old


CUT_MARK = "…"


def _within_budget(text: str, max_bp_bytes: int) -> str:
    """A per-pair summary cut to `max_bp_bytes` UTF-8 bytes (issue 23: a model, or an extractive budget larger
    than the limit, gave 4.6 KB summaries under a 4,096-byte limit). The cut lands on a line or word boundary
    in the last half, so a value is whole or gone, and is marked."""
    data = text.encode("utf-8")
    if len(data) <= max_bp_bytes:
        return text
    room = max(max_bp_bytes - len(CUT_MARK.encode("utf-8")), 0)
    head = data[:room].decode("utf-8", "ignore")
    boundary = max(head.rfind("\n"), head.rfind(" "))
    if boundary >= len(head) // 2:
        head = head[:boundary].rstrip()
    return head + CUT_MARK if room else head


def _oversized_pairs(section: Section, max_bp_bytes: int, ctx: PassContext) -> PassGen:
    body = section.body
    jobs = [j for j, p in enumerate(body[:-1]) if p.size > max_bp_bytes and not p.is_summary]
    if not jobs:
        return
    largest = max(body[j].size for j in jobs)
    ctx.reasons.append(f"tool result {size_words(largest)} > max_bp_bytes {max_bp_bytes:,}: "
                       f"{_plural(len(jobs), 'oversized pair')} summarized alone")
    outcomes = yield Batch("b", tuple(_prompt(section, body[j].messages(), ctx) for j in jobs))
    for j, outcome in zip(jobs, outcomes, strict=False):
        if _failed(outcome):  # PentAGI ignores these: the pair simply stays as it was
            ctx.ignored_failures.append(_reason(outcome))
            continue
        summary = _summary_pair([body[j]], _within_budget(outcome, max_bp_bytes), ctx, keep_reasoning=True)
        if summary.size < body[j].size:  # a summary never grows what it replaces: else the original stays
            body[j] = summary


def rotate_section(section: Section, config: SummarizerConfig, ctx: PassContext) -> PassGen:
    if not section.body:
        return
    yield from _oversized_pairs(section, config.max_bp_bytes, ctx)
    if section.size <= config.last_sec_bytes:
        return
    body = section.body
    old = last_section_split(section.header.size, [p.size for p in body], [p.kind for p in body],
                             config.last_sec_bytes, config.last_section_reserve_percent)
    if old == 0:
        return
    messages = [m for p in body[:old] for m in p.messages()]
    ctx.reasons.append(f"last section {size_words(section.size)} > last_sec_bytes {config.last_sec_bytes:,}: "
                       f"{_plural(old, 'oldest pair')} summarized")
    (outcome,) = yield Batch("b", (_prompt(section, messages, ctx),))
    if _failed(outcome):
        raise StageError(f"last section summary generation failed: {_reason(outcome)}")
    section.body = [_summary_pair(body[:old], outcome, ctx, keep_reasoning=True), *body[old:]]


def stage_b(ast: ChainAST, config: SummarizerConfig, ctx: PassContext) -> PassGen:
    n = len(ast.sections)
    for i in range(n - 1, max(n - config.keep_qa_sections, 0) - 1, -1):
        yield from rotate_section(ast.sections[i], config, ctx)


# ---------------------------------------------------------------- Stage C
def recent_sections_to_keep(sizes: Sequence[int], keep: int, max_sections: int, max_bytes: int) -> int:
    """How many newest sections survive a QA collapse (PentAGI determineRecentSectionsToKeep)."""
    effective = max_bytes - QA_BYTES_MARGIN
    count = min(keep, len(sizes))
    total = sum(sizes[len(sizes) - count:])
    if total > effective:
        return count
    for idx in range(len(sizes) - count - 1, -1, -1):
        if count >= max_sections or total + sizes[idx] > effective:
            break
        total += sizes[idx]
        count += 1
    return count


def _joined_human(humans: list[Message]) -> Message | None:
    """SummHumanInQA off: every old user message, verbatim, as the parts of one message."""
    if not humans:
        return None
    parts = [p for h in humans for p in human_parts(h)]
    if len(parts) == 1 and parts[0].get("type") == "text":
        return {"role": "user", "content": parts[0]["text"]}
    return {"role": "user", "content": parts}


def _qa_human(humans: list[Message], summarize_humans: bool) -> Generator[Batch, list[Outcome], Message | None]:
    if not summarize_humans:
        return _joined_human(humans)
    if not humans:  # Resolution 4: nothing to summarize, keep the header without a user message
        return None
    (outcome,) = yield Batch("c", (build_summary_prompt(humans, []),))
    if _failed(outcome):
        raise StageError(f"QA (human) summary generation failed: {_reason(outcome)}")
    return {"role": "user", "content": outcome}


def _qa_ai_text(humans: list[Message], ais: list[Message],
                ctx: PassContext) -> Generator[Batch, list[Outcome], str]:
    if not ais:  # nothing the AI said: the summary is empty rather than a prompt about the questions
        return ""
    (outcome,) = yield Batch("c", (ctx.build_prompt(humans, ais),))
    if _failed(outcome):
        raise StageError(f"QA (ai) summary generation failed: {_reason(outcome)}")
    summary: str = outcome
    return summary


def _is_lone_summary(sections: Sequence[Section]) -> bool:
    return len(sections) == 1 and len(sections[0].body) == 1 and sections[0].body[0].is_summary


def _qa_header(old: Sequence[Section], new_human: Message | None) -> Header:
    """The first section's system message stays; the user message stands for every old question."""
    first = old[0].header
    human_lineage = merge_lineage(*(s.header.human_lineage for s in old if s.header.human is not None))
    return Header(first.system, new_human, first.system_lineage, human_lineage if new_human else ())


def _qa_reason(sections: int, size: int, config: SummarizerConfig) -> str:
    if sections > config.max_qa_sections:
        return f"QA sections {sections} > max_qa_sections {config.max_qa_sections}"
    return f"chain {size_words(size)} > max_qa_bytes {config.max_qa_bytes:,}"


def stage_c(ast: ChainAST, config: SummarizerConfig, ctx: PassContext, *, keep: int | None = None) -> PassGen:
    sections = ast.sections
    keep = config.keep_qa_sections if keep is None else keep
    if not (len(sections) > config.max_qa_sections or ast.size > config.max_qa_bytes):
        return
    kept = recent_sections_to_keep([s.size for s in sections], keep, config.max_qa_sections, config.max_qa_bytes)
    old, recent = sections[:len(sections) - kept], sections[len(sections) - kept:]
    if not old or _is_lone_summary(old):
        return
    ctx.reasons.append(_qa_reason(len(sections), ast.size, config) + f": {_plural(len(old), 'oldest section')} "
                       "collapsed into one QA section")
    humans = [h for s in old for h in _humans(s)]
    new_human = yield from _qa_human(humans, config.summ_human_in_qa)
    text = yield from _qa_ai_text(humans, [m for s in old for m in s.body_messages()], ctx)
    pair = _summary_pair([p for s in old for p in s.body], text, ctx, keep_reasoning=False)
    rebuilt = [Section(Header(human=s.header.human, human_lineage=s.header.human_lineage), s.body) for s in recent]
    ast.sections = [Section(_qa_header(old, new_human), [pair]), *rebuilt]


def run_passes(ast: ChainAST, config: SummarizerConfig, ctx: PassContext) -> PassGen:
    """Stage A, then B (newest protected section first), then C, on the same AST."""
    yield from stage_a(ast, config.keep_qa_sections, ctx)
    if config.preserve_last:
        yield from stage_b(ast, config, ctx)
    if config.use_qa:
        yield from stage_c(ast, config, ctx)
