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

__all__ = ["SummarizeFn", "SummarizerFactory", "summarizer_for", "set_summarizer_factory", "use_summarizer_factory",
           "InputCounter"]

SummarizeFn = Callable[[str], str]
SummarizerFactory = Callable[..., SummarizeFn]  # called with keywords flow=, event=, purpose=


def _utf8_bytes(text: str) -> int:
    return len(text.encode("utf-8"))


class InputCounter:
    """A summarize callable that counts what it is sent: the calls and the `input` a run would bill, the `system`
    prompt the app sends beside each prompt included, measured by `size` (UTF-8 bytes unless given, e.g. a
    tokenizer's count). `with_system` counts another purpose's calls (the window fit's checkpoints) into the
    same totals."""

    def __init__(self, summarize: SummarizeFn, system: str = "", size: Callable[[str], int] = _utf8_bytes) -> None:
        self.summarize, self.size, self.calls, self.input = summarize, size, 0, 0
        self._system_size = size(system)

    def __call__(self, prompt: str) -> str:
        return self._count(prompt, self._system_size)

    def _count(self, prompt: str, system_size: int) -> str:
        self.calls += 1
        self.input += system_size + self.size(prompt)
        return self.summarize(prompt)

    def with_system(self, system: str) -> SummarizeFn:
        system_size = self.size(system)
        return lambda prompt: self._count(prompt, system_size)


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
