"""Invariants of the window fit (hypothesis) and a fit of every corpus file at 16k / 32k / 128k."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from summarizer import parse_chain
from summarizer.compact.errors import ContextTooLarge
from summarizer.compact.fit import fit_to_window
from summarizer.compact.prompt import parse_summary_message
from summarizer.compact.validate_view import assert_valid_view
from summarizer.settings.config import SummarizerConfig
from summarizer.tokens.count import count_tokens
from tests.conftest import corpus_params, load_corpus
from tests.summarizer.compact_fakes import Checkpoint, words

NO_RESTORE = SummarizerConfig(preserve_last=False, use_qa=False, keep_qa_sections=1000)


@st.composite
def chains(draw):
    """system + turns; each turn a user ask, tool rounds (1-2 calls, results of varied size), maybe an answer.
    The newest turn stays small so the irreducible part always fits a 16k window."""
    out = [{"role": "system", "content": "Agent. " + words(draw(st.integers(10, 800)))}]
    turns = draw(st.integers(1, 8))
    n = 0
    for t in range(turns):
        newest = t == turns - 1
        out.append({"role": "user", "content": f"Task {t} on 10.0.{t}.9: " + words(draw(st.integers(3, 60)), t)})
        rounds = draw(st.integers(0, 2 if newest else 6))
        for _ in range(rounds):
            ids = [f"call_{n}_{k}" for k in range(draw(st.integers(1, 2)))]
            n += 1
            out.append({"role": "assistant", "content": draw(st.sampled_from([None, "Checking."])),
                        "tool_calls": [{"id": i, "type": "function",
                                        "function": {"name": "terminal", "arguments": '{"cmd": "ls"}'}} for i in ids]})
            for i in ids:
                size = draw(st.integers(5, 300 if newest else 4_000))
                out.append({"role": "tool", "tool_call_id": i, "content": words(size, n)})
        if draw(st.booleans()) or newest or rounds == 0:
            out.append({"role": "assistant", "content": "Done: " + words(draw(st.integers(1, 80)), t)})
    return out


def _newest_user_text(messages):
    return next(m["content"] for m in reversed(messages) if m["role"] == "user")


def _pairs(messages):
    calls = {c["id"] for m in messages for c in m.get("tool_calls") or []}
    results = {m["tool_call_id"] for m in messages if m["role"] == "tool"}
    return calls, results


@settings(max_examples=40, deadline=None)
@given(view=chains(), window=st.sampled_from([16_000, 24_000, 32_000]), restore=st.booleans(),
       force=st.booleans())
def test_a_fitted_view_fits_parses_strictly_and_keeps_pairs_system_and_newest_ask(view, window, restore, force):
    result = fit_to_window(view, window_tokens=window, summarize=Checkpoint(),
                           config=None if restore else NO_RESTORE, force=force)
    out = result.messages
    assert result.error is None
    assert result.tokens == count_tokens(out) <= result.budget_tokens
    assert_valid_view(out)
    parse_chain(out)  # strict: raises on any structural problem
    calls, results = _pairs(out)
    assert calls == results
    assert out[0] == view[0]
    newest = _newest_user_text(view)
    assert any(newest in str(m["content"]) for m in out if m["role"] == "user")
    assert len(out) <= len(view) + 1
    assert len(result.lineage) == len(out)
    assert sum(1 for m in out if parse_summary_message(m)[0]) <= 1


@settings(max_examples=25, deadline=None)
@given(view=chains(), window=st.sampled_from([16_000, 32_000]))
def test_fitting_is_idempotent(view, window):
    first = fit_to_window(view, window_tokens=window, summarize=Checkpoint())
    fake = Checkpoint()
    again = fit_to_window(first.messages, window_tokens=window, summarize=fake)
    assert again.messages == first.messages and not again.compacted and fake.calls == 0


@pytest.mark.parametrize("path", corpus_params())
@pytest.mark.parametrize("window", [16_000, 32_000, 128_000])
def test_every_corpus_file_fits_each_window_with_a_valid_view(path, window):
    messages = load_corpus(path)
    try:
        result = fit_to_window(messages, window_tokens=window, summarize=Checkpoint(), config=NO_RESTORE)
    except ContextTooLarge as error:  # an irreducible newest turn is a legitimate outcome; its view is still valid
        assert error.irreducible_tokens > 0
        result = error.partial
    assert_valid_view(result.messages)
    if result.error is None and result.fits:
        assert result.tokens <= window
