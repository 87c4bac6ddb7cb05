"""The bound on one gateway call's summarizing, and the offline summarizer standing in when the models fail.

A gateway call runs the engine on the request path while the agent waits (manage mode's summarize and fit
before the call, an overflow's compaction before a retry). `CallGuard` holds, for the whole call:
- a cap on the summarize calls made to a model (`summary_max_calls`) and one total deadline for all of them
  (`summary_deadline_seconds`); a model call still running at the deadline is no longer waited for (it ends
  within its endpoint's own deadline, its answer unused);
- what happens when a model cannot write a summary (an error, a timeout, an empty or non-text answer, the cap
  or the deadline reached): with `summary_fallback` `offline` the offline extractive summarizer writes that
  summary and the run goes on; with `fail` the run fails closed (compaction.md §0.3), so the call goes
  upstream with the view as it was.
Runs take the guard of the call they serve from a context variable (`guarding`, set by the gateway around its
engine work) when they build their summarize callable (`guarded`): the engine's own worker threads then get
callables that already hold it. The event of each run says which model failed, why, and how many summaries
the offline summarizer wrote (`note_for`).
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from django.db import connections

from flows.pipeline.llm import is_offline, offline_summarizer

__all__ = ["OFFLINE", "FAIL", "CallGuard", "BoundReached", "guarding", "current_guard", "guarded"]

OFFLINE, FAIL = "offline", "fail"
FAILURE_TEXT_CHARS = 300  # of one model failure, in the event's reason

Summarize = Callable[[str], str]
_current: ContextVar[CallGuard | None] = ContextVar("call_guard", default=None)


class BoundReached(RuntimeError):
    """The call's cap or deadline stopped a model call (`fail` mode); reads as a summarizer failure."""


@dataclass
class _Note:
    """What happened to one run's summaries (one event)."""

    asked: int = 0
    stood_in: int = 0
    failures: list[str] = field(default_factory=list)


@dataclass
class CallGuard:
    """One gateway call's bound on summarizing and its fallback; thread-safe (the engine summarizes in a pool)."""

    fallback: str = OFFLINE
    deadline_seconds: float = 0.0  # 0: no deadline
    max_calls: int = 0  # 0: no cap
    clock: Callable[[], float] = time.monotonic
    calls: int = 0  # model calls started so far
    started: float = field(init=False)
    _notes: dict[int | None, _Note] = field(default_factory=dict, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def __post_init__(self) -> None:
        self.started = self.clock()

    @property
    def stands_in(self) -> bool:
        return self.fallback == OFFLINE

    def remaining(self) -> float | None:
        """Seconds left before the deadline (None: no deadline)."""
        return None if not self.deadline_seconds else self.started + self.deadline_seconds - self.clock()

    def _admit(self, note: _Note) -> str:
        """"" and one more call counted, or why no model may be asked any more."""
        with self._lock:
            note.asked += 1
            if self.max_calls and self.calls >= self.max_calls:
                return f"the call's cap of {self.max_calls} summarizer calls was reached"
            left = self.remaining()
            if left is not None and left <= 0:
                return f"the call's summarizing deadline of {self.deadline_seconds:g} s passed"
            self.calls += 1
            return ""

    def failed(self, event_key: int | None, reason: str) -> None:
        """Record a model's failure for the run of `event_key` (shown on its event)."""
        with self._lock:
            note = self._notes.setdefault(event_key, _Note())
            if reason not in note.failures:
                note.failures.append(reason[:FAILURE_TEXT_CHARS])

    def _stood_in(self, note: _Note) -> None:
        with self._lock:
            note.stood_in += 1

    def wrap(self, summarize: Summarize, event_key: int | None) -> Summarize:
        """`summarize` bounded by this call; in `offline` mode never raising for a model's failure."""
        with self._lock:
            note = self._notes.setdefault(event_key, _Note())
        offline = offline_summarizer()

        def bounded(prompt: str) -> str:
            refused = self._admit(note)
            if not refused:
                try:
                    text = self._call(summarize, prompt)
                    if text.strip():
                        return text
                    refused = "the model answered an empty summary"
                except Exception as exc:  # any failure of the model's side: stand in, or fail as before
                    refused = str(exc) or type(exc).__name__
                    if not self.stands_in:
                        self.failed(event_key, refused)
                        if isinstance(exc, TimeoutError):  # ours (the deadline): read as a summarizer failure
                            raise BoundReached(f"summarization failed: {exc}") from exc
                        raise
            self.failed(event_key, refused)
            if not self.stands_in:
                raise BoundReached(f"summarization failed: {refused}")
            self._stood_in(note)
            return offline(prompt)

        return bounded

    def _call(self, summarize: Summarize, prompt: str) -> str:
        """The model's answer, waited for no longer than the deadline allows."""
        left = self.remaining()
        if left is None:
            return summarize(prompt)
        box: dict[str, object] = {}
        done = threading.Event()

        def run() -> None:
            try:
                box["text"] = summarize(prompt)
            except BaseException as exc:  # handed to the waiting caller
                box["error"] = exc
            finally:
                done.set()
                connections.close_all()  # this thread's own connections (LLMCall rows), never another's

        threading.Thread(target=run, name="summarize-bounded", daemon=True).start()
        if not done.wait(max(left, 0.0)):
            raise TimeoutError(f"the model did not answer within the call's summarizing deadline of "
                               f"{self.deadline_seconds:g} s")
        if "error" in box:
            raise box["error"]  # type: ignore[misc]
        text = box.get("text")
        return text if isinstance(text, str) else ""

    def note_for(self, event_key: int | None) -> str:
        """What the event of this run should say about its summaries ("" when every model answered)."""
        with self._lock:
            note = self._notes.get(event_key)
            if note is None or not note.stood_in:
                return ""
            failures = "; ".join(note.failures)
            return (f"the summary model failed ({failures}): the offline summarizer stood in for {note.stood_in} "
                    f"of {note.asked} summaries")

    def failures(self) -> str:
        """Every model failure this call met, once each ("" when none)."""
        with self._lock:
            seen = dict.fromkeys(reason for note in self._notes.values() for reason in note.failures)
        return "; ".join(seen)

    def offline_for(self, event_key: int | None) -> Summarize:
        """The offline summarizer for a rerun of a run the models' summaries failed (an audit failed twice)."""
        offline = offline_summarizer()
        with self._lock:
            note = self._notes.setdefault(event_key, _Note())

        def standing_in(prompt: str) -> str:
            with self._lock:
                note.asked += 1
                note.stood_in += 1
            return offline(prompt)

        return standing_in


def current_guard() -> CallGuard | None:
    return _current.get()


@contextmanager
def guarding(guard: CallGuard | None) -> Iterator[CallGuard | None]:
    """Runs inside the block (in this thread) summarize under `guard`."""
    token = _current.set(guard)
    try:
        yield guard
    finally:
        _current.reset(token)


def guarded(summarize: Summarize, event_key: int | None) -> Summarize:
    """`summarize` under the current call's guard; unchanged off the call path or when it is the offline one."""
    guard = _current.get()
    if guard is None or is_offline(summarize):
        return summarize
    return guard.wrap(summarize, event_key)
