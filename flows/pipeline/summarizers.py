"""Where runs get their summarize callable: one small registry instead of a hard-wired backend.

A run asks `summarizer_for(flow=..., event=..., purpose=...)` and gets `summarize(prompt) -> str`. By default
that is `flows.pipeline.llm.summarize_callable_for` (the flow's model endpoint, or the offline extractive summarizer);
tests and embedders swap the factory with `use_summarizer_factory` instead of patching a module. The factory
is process-wide on purpose: runs happen on worker threads that must see the same choice.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from flows.models import Flow, SummaryEvent
from flows.pipeline.call_guard import guarded
from flows.pipeline.llm.callables import summarize_callable_for

__all__ = ["SummarizeFn", "SummarizerFactory", "summarizer_for", "set_summarizer_factory", "use_summarizer_factory"]

SummarizeFn = Callable[[str], str]
SummarizerFactory = Callable[..., SummarizeFn]  # called with keywords flow=, event=, purpose=


_factory: SummarizerFactory = summarize_callable_for


def summarizer_for(*, flow: Flow | None, event: SummaryEvent | None, purpose: str = "summary") -> SummarizeFn:
    """The summarize callable for one run of `flow` (`purpose` is "summary" or "compaction"), under the bound
    and fallback of the gateway call it serves, when it serves one (`call_guard`)."""
    return guarded(_factory(flow=flow, event=event, purpose=purpose), event.pk if event is not None else None)


def set_summarizer_factory(factory: SummarizerFactory | None) -> SummarizerFactory:
    """Install `factory` (None restores the default); returns the one it replaces."""
    global _factory
    previous, _factory = _factory, factory or summarize_callable_for
    return previous


@contextmanager
def use_summarizer_factory(factory: SummarizerFactory) -> Iterator[None]:
    """Every run inside the block takes its summarize callable from `factory`."""
    previous = set_summarizer_factory(factory)
    try:
        yield
    finally:
        set_summarizer_factory(previous)
