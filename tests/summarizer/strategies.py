"""Hypothesis strategies: valid chains (sections, completions, tool rounds, summaries, reasoning) and configs.

Sizes are drawn wide enough to cross the small limits of `small_configs`, so every pass gets exercised.
"""
from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from summarizer.chain.parse import SUMMARIZATION_TOOL, SUMMARY_PREFIX
from summarizer.settings.config import SummarizerConfig

__all__ = ["chains", "small_configs", "texts"]

Message = dict[str, Any]
_ALPHABET = "ab c\né漢<>&\"{}"
_TOOL_NAMES = ("terminal", "browser", "search", "file_read")


@st.composite
def texts(draw: st.DrawFn, max_repeat: int = 1500) -> str:
    """Short varied text, sometimes padded to a large size (cheap to generate)."""
    base = draw(st.text(alphabet=_ALPHABET, max_size=12))
    pad = draw(st.one_of(st.just(0), st.integers(0, max_repeat)))
    return base + "x" * pad


def _reasoning(draw: st.DrawFn) -> dict[str, Any] | None:
    return draw(st.sampled_from([None, {"content": "thinking", "signature": None},
                                 {"content": "thought", "signature": "c2ln"}, {}]))


@st.composite
def _pair(draw: st.DrawFn, ids: list[int]) -> list[Message]:
    kind = draw(st.sampled_from(["completion", "completion", "rr", "rr", "summary", "prefixed"]))
    if kind in ("completion", "prefixed"):
        text = draw(texts())
        msg: Message = {"role": "assistant", "content": SUMMARY_PREFIX + text if kind == "prefixed" else text}
        reasoning = _reasoning(draw)
        if reasoning is not None and kind == "completion":
            msg["reasoning"] = reasoning
        return [msg]
    n_calls = 1 if kind == "summary" else draw(st.integers(1, 3))
    calls, results = [], []
    for _ in range(n_calls):
        ids[0] += 1
        call_id = f"call_{ids[0]:024d}" if draw(st.booleans()) else f"toolu_{ids[0]}"
        name = SUMMARIZATION_TOOL if kind == "summary" else draw(st.sampled_from(_TOOL_NAMES))
        call: dict[str, Any] = {"id": call_id, "type": "function",
                                "function": {"name": name, "arguments": '{"q": "x"}'}}
        if draw(st.booleans()):
            call["reasoning"] = {"signature": "Z2Vt"}
        calls.append(call)
        result: Message = {"role": "tool", "tool_call_id": call_id, "content": draw(texts(3000))}
        if draw(st.booleans()):
            result["name"] = name
        results.append(result)
    ai: Message = {"role": "assistant", "content": draw(st.sampled_from([None, "", "calling tools"])),
                   "tool_calls": calls}
    reasoning = _reasoning(draw)
    if reasoning is not None:
        ai["reasoning"] = reasoning
    return [ai, *draw(st.permutations(results))]


@st.composite
def chains(draw: st.DrawFn, max_sections: int = 6, max_pairs: int = 6) -> list[Message]:
    """A strictly valid chain with no pending calls; the last section may have an empty body."""
    ids = [0]
    chain: list[Message] = []
    if draw(st.booleans()):
        chain.append({"role": "system", "content": draw(texts(400))})
    n_sections = draw(st.integers(1, max_sections))
    for s in range(n_sections):
        last = s == n_sections - 1
        chain.append({"role": "user", "content": draw(texts(300))})
        for _ in range(draw(st.integers(0 if last else 1, max_pairs))):
            chain.extend(draw(_pair(ids)))
    return chain


@st.composite
def small_configs(draw: st.DrawFn) -> SummarizerConfig:
    return SummarizerConfig(
        preserve_last=draw(st.booleans()), use_qa=draw(st.booleans()), summ_human_in_qa=draw(st.booleans()),
        last_sec_bytes=draw(st.integers(200, 6000)), max_bp_bytes=draw(st.integers(200, 3000)),
        max_qa_sections=draw(st.integers(1, 5)), max_qa_bytes=draw(st.integers(500, 12000)),
        keep_qa_sections=draw(st.integers(1, 3)), last_section_reserve_percent=draw(st.sampled_from([0, 25, 50])))
