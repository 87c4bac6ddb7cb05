"""Summary call ids derive from content: the same chain and settings give byte-identical views."""
from __future__ import annotations

import json
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from summarizer import SummarizerConfig, summarize_chain
from summarizer.chain.ops import normalize_tool_call_ids
from summarizer.chain.parse import parse_chain
from summarizer.chain.toolcall_ids import id_matches
from summarizer.extractive.briefing import make_extractive
from tests.summarizer.engine_builders import ai, call, human, system, tool

_SUMMARY_TOOL = "execute_task_and_return_summary"


def _chain(outputs: list[str]) -> list[dict]:
    messages = [system(), human("scan the lab")]
    for index, output in enumerate(outputs):
        call_id = f"call_{index:024d}"
        messages += [ai(None, call(call_id, args=json.dumps({"cmd": f"step {index}"}))), tool(call_id, output)]
    return messages + [ai("done"), human("next task"), ai("ok")]


def _summary_ids(messages: list[dict]) -> list[str]:
    return [c["id"] for m in messages for c in m.get("tool_calls") or () if c["function"]["name"] == _SUMMARY_TOOL]


def _small() -> SummarizerConfig:
    return SummarizerConfig(preserve_last=False, use_qa=False, summ_human_in_qa=False, last_sec_bytes=2000,
                            max_bp_bytes=400, max_qa_sections=2, max_qa_bytes=4000, keep_qa_sections=1)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.text(min_size=300, max_size=900), min_size=2, max_size=5))
def test_the_same_chain_gives_byte_identical_views(outputs: list[str]) -> None:
    chain = _chain(outputs)
    first = summarize_chain(chain, _small(), make_extractive(600))
    second = summarize_chain(json.loads(json.dumps(chain)), _small(), make_extractive(600))
    assert json.dumps(first.messages) == json.dumps(second.messages)


def test_summary_ids_fit_the_template_and_are_unique_even_for_equal_summaries() -> None:
    chain = _chain(["same output " * 60] * 4)
    result = summarize_chain(chain, _small(), lambda prompt: "the same summary")
    ids = _summary_ids(result.messages)
    assert ids, "the small config must summarize something"
    assert len(ids) == len(set(ids))
    assert all(id_matches(i, "call_{r:24:x}") for i in ids)


def test_a_given_rng_still_decides_the_ids() -> None:
    chain = _chain(["output " * 200] * 3)
    one = summarize_chain(chain, _small(), make_extractive(600), rng=random.Random(1))
    two = summarize_chain(chain, _small(), make_extractive(600), rng=random.Random(2))
    assert _summary_ids(one.messages) != _summary_ids(two.messages)


def test_normalized_ids_are_derived_from_the_old_ones() -> None:
    messages = [system(), human("go"), ai(None, call("weird-1")), tool("weird-1", "x"), ai("done")]
    first, second = parse_chain(messages), parse_chain(json.loads(json.dumps(messages)))
    assert normalize_tool_call_ids(first, "call_{r:24:x}") == 1
    normalize_tool_call_ids(second, "call_{r:24:x}")
    assert first.to_messages() == second.to_messages()
