"""Entry points: run the passes on a chain with a sync or async summarize callable (PentAGI SummarizeChain).

Any failure returns the input unchanged with `.error` set; a half-summarized chain is never returned.
Prompts of one batch run concurrently: a thread pool for the sync callable, asyncio.gather for async. A sync
callable marked `INLINE_MARK` (the offline extractive summarizer: pure CPU in this process) runs its prompts one
after another in the caller's thread instead: under the GIL threads cannot overlap it, they only add their start-up
and switching (about a quarter of a worker's CPU per run of a busy chain), and the results are the same, in order.
"""
from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from summarizer.chain.messages import chain_bytes, clone, utf8_len, validate_messages
from summarizer.chain.nodes import ChainAST
from summarizer.chain.parse import parse_chain
from summarizer.chain.toolcall_ids import detect_id_template, parse_id_template
from summarizer.passes.stages import Batch, PassContext, PassGen, run_passes
from summarizer.settings.config import SummarizerConfig

__all__ = ["SummarizeResult", "summarize_chain", "asummarize_chain", "drive_sync", "MAX_CONCURRENT_SUMMARIES",
           "INLINE_MARK", "runs_inline"]

MAX_CONCURRENT_SUMMARIES = 8  # threads per batch for a sync callable; batches are usually 1-3 prompts
INLINE_MARK = "summarizes_inline"  # attribute set (True) on a callable that computes locally, never waiting
Message = dict[str, Any]
SyncSummarize = Callable[[str], str]
AsyncSummarize = Callable[[str], Awaitable[str]]


@dataclass(frozen=True)
class SummarizeResult:
    """The new chain, how many summarize calls it took, per-message lineage and figures for the dashboard."""

    messages: list[Message]
    calls: int
    lineage: list[list[int]]
    stats: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    @property
    def reason(self) -> str:
        """Which rules fired, in words and numbers ("" when nothing was summarized)."""
        return "; ".join(self.stats.get("reasons", []))


class ChainRun:
    """Bookkeeping shared by the sync and async drivers."""

    def __init__(self, messages: list[Message], config: SummarizerConfig, id_template: str | None,
                 lineage_in: Sequence[Sequence[int]] | None, rng: random.Random | None) -> None:
        if not isinstance(messages, list):
            raise TypeError("messages must be a list of message dicts")
        if lineage_in is not None and len(lineage_in) != len(messages):
            raise ValueError("lineage_in must have one entry per message")
        self.messages, self.config, self.lineage_in = messages, config, lineage_in
        self.id_template, self.rng = id_template, rng
        self.calls = 0
        self.prompt_bytes = 0
        self.stage_calls = {"a": 0, "b": 0, "c": 0}
        self.ctx: PassContext | None = None
        self.before: dict[str, int] = {"bytes": 0, "sections": 0}

    def start(self) -> tuple[ChainAST, PassGen]:
        ast = self.parse()
        assert self.ctx is not None
        return ast, run_passes(ast, self.config, self.ctx)

    def parse(self) -> ChainAST:
        """Validate and parse the input (force mode) and set up the pass context; no pass runs yet."""
        validate_messages(self.messages)
        self.before["bytes"] = chain_bytes(self.messages)
        template = self.id_template or detect_id_template(self.messages)
        parse_id_template(template)
        ast = parse_chain(self.messages, force=True, lineage=self.lineage_in)
        self.before["sections"] = len(ast.sections)
        self.ctx = PassContext(template, self.rng)
        return ast

    def count(self, batch: Batch) -> None:
        self.calls += len(batch.prompts)
        self.stage_calls[batch.stage] += len(batch.prompts)
        self.prompt_bytes += sum(utf8_len(p) for p in batch.prompts)

    def _stats(self, messages_after: int, bytes_after: int, sections_after: int) -> dict[str, Any]:
        return {
            "bytes_before": self.before["bytes"], "bytes_after": bytes_after,
            "sections_before": self.before["sections"], "sections_after": sections_after,
            "messages_before": len(self.messages), "messages_after": messages_after,
            "calls": self.calls, "summarize_input_bytes": self.prompt_bytes, "stage_calls": dict(self.stage_calls),
            "ignored_failures": list(self.ctx.ignored_failures) if self.ctx else [],
            "reasons": list(self.ctx.reasons) if self.ctx else [],
        }

    def success(self, ast: ChainAST) -> SummarizeResult:
        out = ast.to_messages()
        stats = self._stats(len(out), ast.size, len(ast.sections))
        return SummarizeResult(out, self.calls, ast.lineage(), stats)

    def failure(self, exc: BaseException) -> SummarizeResult:
        out = clone(self.messages)
        lineage = ([sorted(set(x)) for x in self.lineage_in] if self.lineage_in is not None
                   else [[i] for i in range(len(out))])
        stats = self._stats(len(out), self.before["bytes"], self.before["sections"])
        return SummarizeResult(out, self.calls, lineage, stats, error=f"{type(exc).__name__}: {exc}")


def _call_sync(summarize: SyncSummarize, prompt: str) -> Any:
    try:
        return summarize(prompt)
    except Exception as exc:  # one failed prompt is an outcome; the pass decides whether it matters
        return exc


def runs_inline(summarize: Callable[..., Any]) -> bool:
    """Whether `summarize` is marked as local computation (`INLINE_MARK`): its prompts gain nothing from threads."""
    return getattr(summarize, INLINE_MARK, False) is True


def _run_batch_sync(summarize: SyncSummarize, batch: Batch) -> list[Any]:
    if len(batch.prompts) == 1 or runs_inline(summarize):
        return [_call_sync(summarize, prompt) for prompt in batch.prompts]
    workers = min(len(batch.prompts), MAX_CONCURRENT_SUMMARIES)
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="summarize") as pool:
        return list(pool.map(lambda p: _call_sync(summarize, p), batch.prompts))


def drive_sync(gen: PassGen, summarize: SyncSummarize,
               on_batch: Callable[[Batch], None] | None = None) -> None:
    """Run a pass generator to completion with a sync callable (exceptions of the pass propagate)."""
    batch = next(gen, None)
    while batch is not None:
        if on_batch is not None:
            on_batch(batch)
        try:
            batch = gen.send(_run_batch_sync(summarize, batch))
        except StopIteration:
            batch = None


def summarize_chain(messages: list[Message], config: SummarizerConfig, summarize: SyncSummarize, *,
                    id_template: str | None = None, lineage_in: Sequence[Sequence[int]] | None = None,
                    rng: random.Random | None = None) -> SummarizeResult:
    """Summarize a chain with PentAGI's passes; `summarize(prompt) -> summary` is the LLM.

    `lineage_in[i]` lists what input message i already stands for (default: [i]); output lineage is
    composed from it. `rng` makes generated summary-call ids reproducible.
    """
    run = ChainRun(messages, config, id_template, lineage_in, rng)
    if not messages:
        return run.success(ChainAST([]))
    try:
        ast, gen = run.start()
        drive_sync(gen, summarize, on_batch=run.count)
    except Exception as exc:  # PentAGI semantics: keep the original chain, report why
        return run.failure(exc)
    return run.success(ast)


async def _call_async(summarize: AsyncSummarize, prompt: str) -> Any:
    return await summarize(prompt)


async def _run_batch_async(summarize: AsyncSummarize, batch: Batch) -> list[Any]:
    outcomes = await asyncio.gather(*(_call_async(summarize, p) for p in batch.prompts), return_exceptions=True)
    for outcome in outcomes:
        if isinstance(outcome, asyncio.CancelledError):
            raise outcome
    return list(outcomes)


async def asummarize_chain(messages: list[Message], config: SummarizerConfig, summarize: AsyncSummarize, *,
                           id_template: str | None = None, lineage_in: Sequence[Sequence[int]] | None = None,
                           rng: random.Random | None = None) -> SummarizeResult:
    """`summarize_chain` for an async callable; concurrent prompts run with asyncio.gather."""
    run = ChainRun(messages, config, id_template, lineage_in, rng)
    if not messages:
        return run.success(ChainAST([]))
    try:
        ast, gen = run.start()
        batch = next(gen, None)
        while batch is not None:
            run.count(batch)
            outcomes = await _run_batch_async(summarize, batch)
            try:
                batch = gen.send(outcomes)
            except StopIteration:
                batch = None
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        return run.failure(exc)
    return run.success(ast)
