"""The window-aware strategy: PentAGI's passes only when the view would not fit, and only as much as needed.

PentAGI's byte budgets (stages A, B, C in `stages`) summarize a chain after every turn whatever the model's
window: with a 128k-token model a 50 KB section is still rotated. The window strategy keeps PentAGI's summary
shapes, lineage, QA collapse and tool-pair rules but decides *when* and *how much* from the window:

  1. Trigger. Nothing is summarized while the view's tokens stay within the trigger: the window minus the
     answer reserve, or `trigger_percent` of the window when that is lower.
  2. Target. Once over, the passes summarize the oldest content until the view is back at the target: what
     the passes can never fold (the system prompt, the user's requests, the newest pair) plus
     `100 - margin_percent` % of the room the trigger leaves beside it, so a pass frees `margin_percent` % of
     that room and the next turns have it before the next pass (hysteresis: one larger fold every few turns
     costs less input than a small one every turn). When that fixed part alone exceeds the trigger no pass
     can help, so none runs: the window fit decides.
  3. How. Tokens become bytes with the chain's own bytes-per-token ratio (the passes measure UTF-8 bytes,
     pentagi-summarizer.md §1.5). Stage C's QA collapse folds the oldest sections into the one summary
     section, keeping at least `keep_qa_sections` and as many more newest sections as fit the target; then,
     oldest first, the kept sections are rotated (stage B's `rotate_section`: a pair alone larger than the
     section's share would be summarized alone, so none is: the oldest pairs fold into one summary pair) by
     the bytes still over the target. The last pair of a section is never summarized. Stage A does not run: it
     condenses every old section whether or not the window needs it, which is the cost this strategy avoids.
  4. Input. With `input_tokens` (`DEFAULT_INPUT_TOKENS` in the app's settings), each summarize call is sent at
     most that much, and at most 1/`INPUT_SHARE` of the trigger (`input_limit_tokens`), under short instructions
     (`INSTRUCTIONS_BOUNDED`): the part of the span that is not a summary yet, as it is when it fits, else its
     extractive digest within the bound; the findings and identifiers the model's summary does not
     quote go into its ledger, and the span's earlier summaries are merged with the new one without being
     sent again, within `SUMMARY_SHARE` of the room (`bounded`). With `local_folds`, a span of tool calls and
     output only, or one within the summary's budget, is folded by the offline summarizer with no call.
     Without `input_tokens` the model reads the whole span, earlier summaries included, as PentAGI's do.

A view that still does not fit afterwards (one huge newest pair) is left to the window fit
(`summarizer.compact.fit_to_window`), which the pipeline runs after summarizing in both strategies.
"""
from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from summarizer.chain.nodes import ChainAST
from summarizer.passes.stages import QA_BYTES_MARGIN, PassContext, PassGen, rotate_section, stage_c
from summarizer.passes.summarize import ChainRun, SummarizeResult, SyncSummarize, drive_sync
from summarizer.settings.config import SummarizerConfig
from summarizer.settings.spec import MIN_BYTES
from summarizer.strategy.bounded import BoundedPrompts, bounded
from summarizer.tokens.count import count_tokens

__all__ = ["WindowTarget", "summarize_chain_for_window", "window_passes", "fixed_bytes", "STRATEGIES", "PENTAGI",
           "WINDOW", "INPUT_SHARE", "SUMMARY_SHARE", "DEFAULT_INPUT_TOKENS"]

PENTAGI, WINDOW = STRATEGIES = ("pentagi", "window")
Message = dict[str, Any]
# A call's input is at most 1/INPUT_SHARE of the trigger. It reads the span's extractive digest, and the ledger and
# the local merge keep the rest, so a larger share bought input more than facts: on the corpus at 16k, 1/32 sent
# about LangChain's input and 1/64 a seventh less, both at more probe facts than it keeps (docs/benchmarks.md).
INPUT_SHARE = 64
# The bound's default for large windows (the app's `window_input_tokens`). 1/64 of the trigger alone would send a
# 128k model's folds 1,600 tokens of digest: what the model adds to a digest is its rewrite, while the ledger and the
# local merge keep the facts whatever the bound, so on the corpus's one transcript longer than 128k a 256-token
# digest kept the same probe facts as 4,000 at a third of the input (docs/benchmarks.md). Below a 16k window the
# 1/64 share is the smaller bound anyway.
DEFAULT_INPUT_TOKENS = 256
SUMMARY_SHARE = 30  # with a bounded input, the merged summary takes at most this % of the room beside the fixed part
MIN_SUMMARY_BYTES, MAX_SUMMARY_BYTES = 1024, 16 * 1024


@dataclass(frozen=True)
class WindowTarget:
    """The model's window and when the window strategy summarizes (all in tokens of `model`'s encoding)."""

    window_tokens: int
    reserve_tokens: int = 0
    trigger_percent: int = 100
    margin_percent: int = 50
    model: str | None = None
    input_tokens: int = 0  # at most this much summarizer input per call (0: the whole span)
    local_folds: bool = True  # with input_tokens: spans the offline summarizer folds as well make no call

    def __post_init__(self) -> None:
        if self.window_tokens <= 0:
            raise ValueError("window_tokens must be positive")
        if not 0 <= self.reserve_tokens < self.window_tokens:
            raise ValueError("reserve_tokens must be at least 0 and smaller than the window")
        if not 1 <= self.trigger_percent <= 100:
            raise ValueError("trigger_percent must be between 1 and 100")
        if not 0 <= self.margin_percent <= 90:
            raise ValueError("margin_percent must be between 0 and 90")
        if self.input_tokens < 0:
            raise ValueError("input_tokens must be at least 0")

    @property
    def trigger_tokens(self) -> int:
        """Above this many view tokens the passes run."""
        return min(self.window_tokens - self.reserve_tokens, self.window_tokens * self.trigger_percent // 100)

    @property
    def target_tokens(self) -> int:
        """What a pass brings the view back to when nothing in it is fixed (see `window_passes` for the rest)."""
        return self.trigger_tokens * (100 - self.margin_percent) // 100

    @property
    def input_limit_tokens(self) -> int:
        """At most this much summarizer input per call: `input_tokens`, and never more than 1/`INPUT_SHARE` of
        the trigger (a small window's folds are small); 0 when the model reads the whole span."""
        return min(self.input_tokens, self.trigger_tokens // INPUT_SHARE) if self.input_tokens else 0


def _over_target(ast: ChainAST, target_bytes: int) -> int:
    return ast.size - target_bytes


def _rotate_kept(ast: ChainAST, config: SummarizerConfig, ctx: PassContext, target_bytes: int,
                 keep: int) -> PassGen:
    """Oldest first, shrink each of the newest `keep` sections by what the view is still over the target."""
    n = len(ast.sections)
    for i in range(max(n - keep, 0), n):
        excess = _over_target(ast, target_bytes)
        if excess <= 0:
            return
        section = ast.sections[i]
        share = max(section.size - excess, MIN_BYTES)
        # max_bp_bytes at the section's size: no pair is summarized alone (one call per pair is what a small
        # share would cost); an oversized old pair folds with the others into the one summary
        yield from rotate_section(section, config.replace(last_sec_bytes=share, max_bp_bytes=max(section.size, 1),
                                                          last_section_reserve_percent=0), ctx)


def _largest_summary(ast: ChainAST) -> int:
    return max((p.size for s in ast.sections for p in s.body if p.is_summary), default=0)


def fixed_bytes(ast: ChainAST) -> int:
    """What no pass folds: every section's header (the system prompt, the user's requests) and the newest pair."""
    newest = ast.sections[-1].body[-1].size if ast.sections and ast.sections[-1].body else 0
    return sum(s.header.size for s in ast.sections) + newest


def window_passes(ast: ChainAST, config: SummarizerConfig, ctx: PassContext, target_bytes: int,
                  summary_room: int | None = None) -> PassGen:
    """QA collapse of the oldest sections, then rotation of the kept ones, until the view is within
    `target_bytes` (see the module docstring). Honours `use_qa` and `preserve_last` as PentAGI does.
    `summary_room`: the bytes the new summary will take (default: as much as the largest summary already in
    the view, since a fold replaces it by one of about its size), so a pass lands at the target."""
    keep = config.keep_qa_sections
    room = _largest_summary(ast) if summary_room is None else summary_room
    target_bytes = max(target_bytes - room, MIN_BYTES)
    if config.use_qa and _over_target(ast, target_bytes) > 0:
        # stage C keeps the newest sections within max_qa_bytes minus its margin, so the margin is added back
        collapse = config.replace(max_qa_bytes=max(target_bytes, MIN_BYTES) + QA_BYTES_MARGIN,
                                  max_qa_sections=len(ast.sections) + 1)
        yield from stage_c(ast, collapse, ctx, keep=keep)
    if config.preserve_last:
        yield from _rotate_kept(ast, config, ctx, target_bytes, keep)


def _as_bytes(ast: ChainAST, tokens: int, amount: int) -> int:
    """`amount` tokens in the passes' bytes, by this chain's own bytes per token."""
    return max(ast.size * amount // max(tokens, 1), MIN_BYTES)


def _passes(ast: ChainAST, config: SummarizerConfig, ctx: PassContext, tokens: int, target: WindowTarget,
            decision: dict[str, Any]) -> PassGen:
    trigger, fixed = _as_bytes(ast, tokens, target.trigger_tokens), fixed_bytes(ast)
    decision["fixed_bytes"] = fixed
    if fixed >= trigger:  # the system prompt, the requests and the newest pair alone: no fold can help
        decision["unreachable"] = True
        return
    room = trigger - fixed
    decision["target_bytes"] = fixed + room * (100 - target.margin_percent) // 100
    if not target.input_tokens:
        yield from window_passes(ast, config, ctx, decision["target_bytes"])
        return
    decision["input_bytes_limit"] = _as_bytes(ast, tokens, target.input_limit_tokens)
    decision["summary_bytes_limit"] = min(max(room * SUMMARY_SHARE // 100, MIN_SUMMARY_BYTES), MAX_SUMMARY_BYTES)
    prompts = BoundedPrompts(decision["input_bytes_limit"], decision["summary_bytes_limit"], local=target.local_folds)
    ctx.build_prompt = prompts
    yield from bounded(window_passes(ast, config, ctx, decision["target_bytes"],
                                     summary_room=decision["summary_bytes_limit"]), prompts)
    decision["local_folds"] = prompts.local_folds
    if prompts.local_folds:
        folds = "1 fold" if prompts.local_folds == 1 else f"{prompts.local_folds} folds"
        ctx.reasons.append(f"{folds} made by the offline summarizer, no model call (tool output only, or within "
                           "the summary's budget: window_local_folds)")


def summarize_chain_for_window(messages: list[Message], config: SummarizerConfig, summarize: SyncSummarize, *,
                               target: WindowTarget, id_template: str | None = None,
                               lineage_in: Sequence[Sequence[int]] | None = None,
                               rng: random.Random | None = None) -> SummarizeResult:
    """`summarize_chain` with the window strategy: the same result type, shapes and failure semantics (any
    failure returns the input unchanged with `.error`); `stats["window"]` says what was decided."""
    run = ChainRun(messages, config, id_template, lineage_in, rng)
    if not messages:
        return run.success(ChainAST([]))
    tokens = count_tokens(messages, model=target.model)
    decision: dict[str, Any] = {"strategy": WINDOW, "tokens_before": tokens, "trigger_tokens": target.trigger_tokens,
                                "target_tokens": target.target_tokens, "triggered": tokens > target.trigger_tokens}
    try:
        ast = run.parse()
        if decision["triggered"]:
            assert run.ctx is not None
            drive_sync(_passes(ast, config, run.ctx, tokens, target, decision), summarize, on_batch=run.count)
    except Exception as exc:  # PentAGI semantics: keep the original chain, report why
        result = run.failure(exc)
    else:
        result = run.success(ast)
    result.stats["window"] = decision
    return result
