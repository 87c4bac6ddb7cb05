"""Deciding what a fit needs, before doing anything (acceptance facts 1, 2, 4-9).

Separate from fit.py so the arithmetic (reserve, budget, threshold, plan) is a set of pure functions that
the dashboard can also call to explain a decision without running one.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from summarizer.compact.truncate import truncate_tool_results

__all__ = ["FitPlan", "plan_fit", "effective_reserve", "should_compact", "usage_tokens", "last_usage_tokens",
           "count_functions", "RESERVE_MAX_WINDOW_SHARE", "GIVEN_RESERVE_MAX_WINDOW_SHARE"]

Message = dict[str, Any]
RESERVE_MAX_WINDOW_SHARE = 0.2  # default reserve: the model's max output, at most 20% of the window
GIVEN_RESERVE_MAX_WINDOW_SHARE = 0.5  # a configured reserve as large as the window shrinks to half of it (facts 6-7)


def count_functions(model: str | None, tools: Sequence[dict[str, Any]] | None
                    ) -> tuple[Callable[[Sequence[Message]], int], Callable[[Message], int]]:
    """(count a view, count one message) with our token counter for `model`."""
    from summarizer.tokens.count import count_tokens, message_tokens  # lazy: tiktoken is loaded on first count
    return (lambda msgs: count_tokens(list(msgs), model=model, tools=list(tools) if tools else None),
            partial(message_tokens, model=model))


def _catalog_max_output(model: str | None) -> int | None:
    if not model:
        return None
    from summarizer.tokens.catalog import lookup_model  # lazy: the catalog loads a data file
    info = lookup_model(model)
    return getattr(info, "max_output_tokens", None) if info else None

@dataclass(frozen=True)
class FitPlan:
    """What fitting would have to do (facts 4-9): fits | truncate_tool_results_only | compact_then_truncate |
    compact_only."""

    decision: str
    tokens: int
    budget_tokens: int
    tokens_after_truncation: int

    @property
    def should_compact(self) -> bool:
        return self.decision in ("compact_then_truncate", "compact_only")


def effective_reserve(window_tokens: int, reserve_tokens: int | None = None, model: str | None = None, *,
                      max_output_tokens: int | None = None) -> int:
    """Tokens kept free for the answer: the given reserve (half the window when it would leave no room for a
    prompt at all, facts 6-7), else the model's max output, at most 20% of the window.

    The one reserve computation: the engine, the pipeline and the chain page's window bar all call it.
    `max_output_tokens` is the max output as the caller knows it (an admin row, the endpoint); without it the
    catalog's value for `model` is used.
    """
    if reserve_tokens is not None:
        reserve = max(int(reserve_tokens), 0)
        return int(window_tokens * GIVEN_RESERVE_MAX_WINDOW_SHARE) if reserve >= window_tokens else reserve
    cap = int(window_tokens * RESERVE_MAX_WINDOW_SHARE)
    max_output = max_output_tokens or _catalog_max_output(model)
    return min(max_output, cap) if max_output else cap


def plan_fit(messages: Sequence[Message], *, window_tokens: int, reserve_tokens: int | None = None,
             model: str | None = None, tools: Sequence[dict[str, Any]] | None = None) -> FitPlan:
    """Decide, without any model call, what fitting `messages` needs."""
    count, _ = count_functions(model, tools)
    budget = window_tokens - effective_reserve(window_tokens, reserve_tokens, model)
    tokens = count(messages)
    cut, changed = truncate_tool_results(messages, window_tokens=window_tokens, model=model)
    after = count(cut) if changed else tokens
    if tokens <= budget:
        decision = "fits"
    elif after <= budget:
        decision = "truncate_tool_results_only"
    else:
        decision = "compact_then_truncate" if changed else "compact_only"
    return FitPlan(decision=decision, tokens=tokens, budget_tokens=budget, tokens_after_truncation=after)


def should_compact(context_tokens: int, window_tokens: int, reserve_tokens: int, *, enabled: bool = True) -> bool:
    """The threshold test (fact 1): compact when the context leaves less than the reserve free."""
    return enabled and context_tokens > window_tokens - reserve_tokens


def usage_tokens(usage: Mapping[str, Any]) -> int:
    """Context size a provider reported (fact 2): its total if present, else input + output + cache parts.
    Accepts OpenAI (prompt/completion_tokens) and Anthropic/pi (input/output/cache_*) key spellings."""
    total = usage.get("total_tokens") or usage.get("totalTokens")
    if total:
        return int(total)
    keys = ("prompt_tokens", "completion_tokens", "input", "output", "input_tokens", "output_tokens", "cacheRead",
            "cacheWrite", "cache_read_input_tokens", "cache_creation_input_tokens")
    return sum(int(usage.get(k) or 0) for k in keys)


def last_usage_tokens(messages: Sequence[Message]) -> int | None:
    """The usage of the newest assistant message that carries one and was not aborted (fact 2)."""
    for message in reversed(messages):
        if message.get("role") != "assistant" or not isinstance(message.get("usage"), Mapping):
            continue
        if message.get("aborted") or message.get("stop_reason") in ("aborted", "error"):
            continue
        return usage_tokens(message["usage"])
    return None
