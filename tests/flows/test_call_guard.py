"""The bound on one gateway call's summarizing (`flows.pipeline.call_guard`), as a unit: the cap, the deadline
on an injected clock, what stands in, and what the event is told."""
from __future__ import annotations

import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flows.pipeline.call_guard import FAIL, OFFLINE, BoundReached, CallGuard, guarded, guarding
from flows.pipeline.llm import offline_summarizer
from tests.fakes import FakeSummarizer

PROMPT = "<messages>scan of 10.10.5.23 found 22/tcp open ssh OpenSSH 8.9p1</messages>"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@given(cap=st.integers(min_value=1, max_value=6), prompts=st.integers(min_value=0, max_value=20))
def test_the_model_is_never_asked_more_than_the_cap_and_every_prompt_gets_a_summary(cap: int, prompts: int) -> None:
    model = FakeSummarizer("## Summary\nsomething")
    summarize = CallGuard(fallback=OFFLINE, max_calls=cap).wrap(model, None)
    answers = [summarize(PROMPT) for _ in range(prompts)]
    assert model.calls == min(cap, prompts)
    assert all(a.strip() for a in answers)


def test_past_the_deadline_no_model_is_asked_and_the_offline_summarizer_writes_it() -> None:
    clock, model = Clock(), FakeSummarizer("## Summary\nby the model")
    guard = CallGuard(fallback=OFFLINE, deadline_seconds=10, clock=clock)
    summarize = guard.wrap(model, 7)
    assert summarize(PROMPT) == "## Summary\nby the model"
    clock.now += 10
    assert "10.10.5.23" in summarize(PROMPT) and model.calls == 1
    assert guard.note_for(7) == ("the summary model failed (the call's summarizing deadline of 10 s passed): the "
                                 "offline summarizer stood in for 1 of 2 summaries")


def test_in_fail_mode_the_cap_stops_the_model_with_a_summarizer_failure() -> None:
    model = FakeSummarizer("s")
    summarize = CallGuard(fallback=FAIL, max_calls=1).wrap(model, None)
    summarize(PROMPT)
    with pytest.raises(BoundReached, match="summarization failed: the call's cap of 1 summarizer calls"):
        summarize(PROMPT)
    assert model.calls == 1


def test_a_failing_model_raises_as_before_in_fail_mode_and_is_replaced_in_offline_mode() -> None:
    strict = CallGuard(fallback=FAIL)
    with pytest.raises(RuntimeError, match="LLM unavailable"):
        strict.wrap(FakeSummarizer(fail=True), None)(PROMPT)
    assert strict.failures() == "LLM unavailable" and strict.note_for(None) == ""  # said, but nothing stood in
    guard = CallGuard(fallback=OFFLINE)
    assert "OpenSSH 8.9p1" in guard.wrap(FakeSummarizer(fail=True), 3)(PROMPT)
    assert guard.wrap(FakeSummarizer("   "), 4)(PROMPT).strip()
    assert "LLM unavailable" in guard.note_for(3) and "empty summary" in guard.note_for(4)
    assert guard.note_for(5) == ""


def test_a_model_still_blocked_at_the_deadline_is_not_waited_for() -> None:
    release, entered = threading.Event(), threading.Event()

    def blocked(prompt: str) -> str:
        entered.set()
        release.wait(30)
        return "late"

    guard = CallGuard(fallback=OFFLINE, deadline_seconds=0.2)
    try:
        answer = guard.wrap(blocked, 1)(PROMPT)  # returns only if the guard stopped waiting: nothing was released
        assert entered.is_set() and answer != "late" and "10.10.5.23" in answer
        assert "did not answer within the call's summarizing deadline" in guard.note_for(1)
    finally:
        release.set()


def test_the_offline_summarizer_is_never_counted_or_wrapped() -> None:
    offline = offline_summarizer()
    with guarding(CallGuard(max_calls=1)):
        assert guarded(offline, None) is offline
        assert guarded(FakeSummarizer(), None) is not offline
    assert isinstance(guarded(FakeSummarizer(), None), FakeSummarizer)  # off the call path: unchanged
