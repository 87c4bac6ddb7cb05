"""The callables the pipeline hands to the pure engine: `summarize(prompt) -> str` and `chat(messages)`.

Which backend writes a summary is decided once, when the callable is built (a plan):
- no OpenAI-compatible provider for the flow (none assigned, no default, no env) → the offline extractive
  summarizer;
- otherwise the provider's model (purpose "summary", PentAGI's per-provider summarizer), or for purpose
  "compaction" the flow settings' `compaction_model` (explicit: that model only, never a fallback) or, unset,
  the agent's model followed by `fallback_models`, each tried in turn on retryable provider errors.
Every HTTP call and every cache hit becomes an LLMCall row, linked to the event when one is given. A model's
summary gets the deterministic ledger of what it left out (summarizer.extractive.ledger) before it is cached or used.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard

from flows.config import provider_for, settings_for, split_model_ref
from flows.engine import SummaryCache, cap_input, make_extractive, with_ledger
from flows.models import Flow, ProviderConfig, ProviderKind, SummaryEvent
from flows.pipeline.llm.client import Completion, complete
from flows.pipeline.llm.errors import LLMError, SummaryFailed
from flows.pipeline.llm.prompts import system_prompt_for
from flows.pipeline.llm.recording import held_calls, record_call

__all__ = ["Target", "Plan", "plan_for", "summarize_callable_for", "chat_callable_for", "clear_summary_caches",
           "PURPOSES", "SUMMARY_CACHE_ENTRIES", "offline_summarizer", "is_offline"]

PURPOSES = ("summary", "compaction")
SUMMARY_CACHE_ENTRIES = 100  # PentAGI: an LRU of 100 summaries per provider

Usage = dict[str, int | None]


@dataclass(frozen=True)
class Target:
    provider: ProviderConfig
    model: str

    @property
    def key(self) -> tuple[int, str, str]:
        return (self.provider.pk, self.provider.base_url, self.model)


@dataclass(frozen=True)
class Plan:
    targets: tuple[Target, ...]
    fallback: bool  # on a retryable error move on to the next target
    problem: str = ""  # a configuration that cannot work: every call fails with this reason


def _is_endpoint(provider: ProviderConfig | None) -> TypeGuard[ProviderConfig]:
    return provider is not None and provider.kind == ProviderKind.OPENAI


def _flow_of(flow: Flow | None, event: SummaryEvent | None) -> Flow | None:
    if flow is None and event is not None:
        return event.chain.agent.flow
    return flow


def _profile_of(event: SummaryEvent | None) -> str:
    return event.chain.agent.profile if event is not None else "agent"


def _compaction_plan(flow: Flow | None, profile: str) -> Plan | None:
    settings = settings_for(profile=profile, flow=flow)
    default = provider_for(flow=flow)
    if settings.compaction_model.strip():
        provider, model = split_model_ref(settings.compaction_model)
        provider = provider or default
        if provider is not None and provider.kind == ProviderKind.EXTRACTIVE:
            return None
        if not _is_endpoint(provider):
            return Plan((), False, f"compaction model {settings.compaction_model!r} is set but no "
                                   "OpenAI-compatible provider is configured for it")
        return Plan((Target(provider, model),), fallback=False)
    if not _is_endpoint(default):
        return None
    targets = [Target(default, (flow.model_name if flow is not None else "") or default.model)]
    for ref in filter(None, (part.strip() for part in settings.fallback_models.split(","))):
        provider, model = split_model_ref(ref)
        candidate = provider or default
        if _is_endpoint(candidate):
            targets.append(Target(candidate, model))
    unique = tuple(dict((target.key, target) for target in targets).values())
    return Plan(unique, fallback=True)


def plan_for(*, flow: Flow | None = None, purpose: str = "summary", profile: str = "agent") -> Plan | None:
    """Who writes the summary; None means the offline extractive summarizer."""
    if purpose not in PURPOSES:
        raise ValueError(f"unknown purpose {purpose!r}: expected one of {PURPOSES}")
    if purpose == "compaction":
        return _compaction_plan(flow, profile)
    provider = provider_for(flow=flow)
    if not _is_endpoint(provider):
        return None
    model = provider.model or (flow.model_name if flow is not None else "")
    if not model:
        return Plan((), False, f"provider {provider.name!r} has no model set")
    return Plan((Target(provider, model),), fallback=False)


_caches: dict[tuple[Any, ...], SummaryCache] = {}
_caches_lock = threading.Lock()


def _cache_for(plan: Plan, purpose: str) -> SummaryCache:
    key = (purpose, *(target.key for target in plan.targets))
    with _caches_lock:
        cache = _caches.get(key)
        if cache is None:
            cache = _caches[key] = SummaryCache(max_entries=SUMMARY_CACHE_ENTRIES)
        return cache


def clear_summary_caches() -> None:
    """Forget every cached summary (tests; an admin changing a provider's prompt-affecting settings)."""
    with _caches_lock:
        _caches.clear()


def _elapsed_ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)


class _EndpointSummarizer:
    """summarize(prompt) -> str over a plan's targets, with the 64 KB input cap and the SHA-256 cache."""

    def __init__(self, plan: Plan, *, purpose: str, event: SummaryEvent | None) -> None:
        self.plan, self.purpose, self.event = plan, purpose, event
        self.cache = _cache_for(plan, purpose)
        self.held = held_calls()  # a dry run's list: read here, on the thread that builds the callable

    def __call__(self, prompt: str) -> str:
        messages = [{"role": "system", "content": system_prompt_for(self.purpose)},
                    {"role": "user", "content": cap_input(prompt)}]
        hit = self.cache.get(prompt)  # keyed by the SHA-256 of the full prompt, as PentAGI does
        if hit is not None:
            first = self.plan.targets[0]
            record_call(provider=first.provider, model=first.model, messages=messages, event=self.event,
                        duration_ms=0, cached=True, held=self.held)
            return hit
        # the ledger is appended before caching: a cache hit returns exactly what the first call returned
        summary = with_ledger(prompt, self._call_targets(messages))
        self.cache.put(prompt, summary)
        return summary

    def _call_targets(self, messages: list[dict[str, Any]]) -> str:
        last: LLMError | None = None
        for target in self.plan.targets:
            started = time.monotonic()
            try:
                completion = complete(target.provider, target.model, messages)
            except LLMError as exc:
                record_call(provider=target.provider, model=target.model, messages=messages, event=self.event,
                            duration_ms=_elapsed_ms(started), error=exc, held=self.held)
                last = exc
                if exc.retryable and self.plan.fallback:
                    continue
                break
            record_call(provider=target.provider, model=target.model, messages=messages, event=self.event,
                        duration_ms=_elapsed_ms(started), completion=completion, held=self.held)
            return completion.text
        if last is None:  # a plan without a problem always has a target; this is the empty plan's answer
            raise SummaryFailed("summarization failed: no model to ask")
        failure = SummaryFailed(f"summarization failed ({target.model}): {last}", attempts=last.attempts,
                                status=last.status)
        failure.retryable = last.retryable
        raise failure from last


def _failing(reason: str) -> Callable[[str], str]:
    def summarize(prompt: str) -> str:
        raise SummaryFailed(f"summarization failed: {reason}")
    return summarize


def offline_summarizer() -> Callable[[str], str]:
    """The offline extractive summarizer, marked as such: a gateway call's bound never counts or replaces it."""
    summarize = make_extractive()
    setattr(summarize, "offline", True)  # noqa: B010 - a marker on a function object
    return summarize


def is_offline(summarize: Callable[[str], str]) -> bool:
    return bool(getattr(summarize, "offline", False))


def summarize_callable_for(*, flow: Flow | None = None, event: SummaryEvent | None = None,
                           purpose: str = "summary") -> Callable[[str], str]:
    """summarize(prompt) -> summary text for the flow (extractive unless an endpoint is configured).

    The endpoint callable raises SummaryFailed (never returns an empty summary); its message contains
    "summarization failed", which the overflow-recovery loop treats as a summarizer error (never compacted).
    """
    flow = _flow_of(flow, event)
    plan = plan_for(flow=flow, purpose=purpose, profile=_profile_of(event))
    if plan is None:
        return offline_summarizer()
    if plan.problem:
        return _failing(plan.problem)
    return _EndpointSummarizer(plan, purpose=purpose, event=event)


def _usage(completion: Completion) -> Usage:
    total = None
    if completion.prompt_tokens is not None and completion.completion_tokens is not None:
        total = completion.prompt_tokens + completion.completion_tokens
    return {"prompt_tokens": completion.prompt_tokens, "completion_tokens": completion.completion_tokens,
            "total_tokens": total}


def chat_callable_for(*, flow: Flow | None = None, event: SummaryEvent | None = None,
                      provider: ProviderConfig | None = None, model: str | None = None,
                      max_tokens: int | None = None) -> Callable[[Sequence[dict[str, Any]]], tuple[str, Usage]]:
    """chat(messages) -> (text, usage) against the flow's model (or `provider`/`model` when given).

    A context overflow raises ContextOverflowError whose text is the provider's message, so
    `summarizer.is_context_overflow_error(error)` and `observed_token_count(error)` work on it.
    Raises LLMError at once when no OpenAI-compatible endpoint is configured.
    """
    flow = _flow_of(flow, event)
    provider = provider or provider_for(flow=flow)
    if not _is_endpoint(provider):
        raise LLMError("no OpenAI-compatible provider is configured: set LLM_SERVER_URL / OPENAI_API_KEY or "
                       "add a provider in the admin")
    model = model or (flow.model_name if flow is not None else "") or provider.model

    def chat(messages: Sequence[dict[str, Any]]) -> tuple[str, Usage]:
        started = time.monotonic()
        try:
            completion = complete(provider, model, messages, max_tokens=max_tokens)
        except LLMError as exc:
            record_call(provider=provider, model=model, messages=messages, event=event,
                        duration_ms=_elapsed_ms(started), error=exc)
            raise
        record_call(provider=provider, model=model, messages=messages, event=event,
                    duration_ms=_elapsed_ms(started), completion=completion)
        return completion.text, _usage(completion)

    return chat
