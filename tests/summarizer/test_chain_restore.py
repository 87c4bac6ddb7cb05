"""Chain restore and provider switch (§2.1): the call sites around the restore profile."""
from __future__ import annotations

import random

from summarizer import check_invariants, parse_chain
from summarizer.chain.parse import SUMMARIZATION_TOOL, UNHANDLED_CALL_TEXT
from summarizer.passes.restore import CONTINUE_TEXT, prepare_provider_switch, restore_chain
from tests.summarizer.engine_builders import FakeSummarizer, ai, call, human, rr, system, tool


def _stored() -> list[dict]:
    return [system("old prompt"), human("task 1"),
            ai("thinking", call("toolu_01", args="{\"cmd\": \"a\nb\"}", reasoning={"signature": "c2ln"}),
               reasoning={"content": "why", "signature": "eA=="}),
            tool("toolu_01", "out"), ai("task 1 done")]


def test_restore_replaces_the_system_prompt_and_appends_the_new_task():
    result = restore_chain(_stored(), system_prompt="new prompt", human_prompt="task 2",
                           summarize=FakeSummarizer(), id_template="call_{r:24:x}", rng=random.Random(2))
    out = result.messages
    assert result.error is None and out[0] == system("new prompt") and out[-1] == human("task 2")
    assert check_invariants(parse_chain(out)) == []


def test_restore_normalizes_ids_sanitizes_arguments_and_clears_reasoning():
    result = restore_chain(_stored(), system_prompt="p", human_prompt="t2", summarize=FakeSummarizer(),
                           id_template="call_{r:24:x}")
    calls = [c for m in result.messages for c in m.get("tool_calls") or ()]
    assert all(c["id"].startswith("call_") and len(c["id"]) == 29 for c in calls)
    assert all("reasoning" not in m for m in result.messages) and all("reasoning" not in c for c in calls)


def test_restore_drops_an_unanswered_question():
    pending = [system(), human("t1"), ai("a1"), human("never answered")]
    out = restore_chain(pending, system_prompt="p", human_prompt="t2", summarize=FakeSummarizer()).messages
    assert human("never answered") not in out and out[-1] == human("t2")


def test_restore_keeps_an_unfinished_call_answered_by_force_parsing():
    """§2.1 + §1.3: restore parses with force, so a trailing call gets the 'not handled' result and stays;
    the task then ages out and its summary is a fake tool call because it held tool activity."""
    unfinished = [system(), human("t1"), ai("a1"), ai(None, call("c9", "nmap"))]
    summarizer = FakeSummarizer()
    out = restore_chain(unfinished, system_prompt="p", human_prompt="t2", summarize=summarizer).messages
    assert summarizer.calls == 1
    assert '<tool_call name="nmap"' in summarizer.prompts[0] and UNHANDLED_CALL_TEXT in summarizer.prompts[0]
    assert [c["function"]["name"] for m in out for c in m.get("tool_calls") or ()] == [SUMMARIZATION_TOOL]
    assert out[-1] == human("t2")


def test_restore_of_an_empty_chain_is_a_fresh_chain():
    result = restore_chain([], system_prompt="p", human_prompt="t", summarize=FakeSummarizer())
    assert result.messages == [system("p"), human("t")] and result.error is None


def test_a_failing_restore_summary_keeps_the_normalized_chain():
    chain = [system()]
    for i in range(5):
        chain += [human(f"t{i}"), *rr(f"c{i}", "o" * 9000)]
    result = restore_chain(chain, system_prompt="p", human_prompt="t9", summarize=FakeSummarizer(fail=True))
    assert result.error and result.messages[0] == system("p") and result.messages[-1] == human("t9")


def test_restore_uses_the_aggressive_profile():
    chain = [system()]
    for i in range(5):
        chain += [human(f"t{i}"), *rr(f"c{i}", "o" * 9000)]
    result = restore_chain(chain, system_prompt="p", human_prompt="t9", summarize=FakeSummarizer())
    assert len(parse_chain(result.messages).sections) <= 4 and parse_chain(result.messages).size <= 20 * 1024


def test_a_provider_switch_ends_with_a_user_message():
    out = prepare_provider_switch(_stored(), id_template="call_{r:24:x}")
    assert out[-1] == human(CONTINUE_TEXT) and all("reasoning" not in m for m in out)
    assert prepare_provider_switch([system(), human("q")], id_template="call_{r:24:x}")[-1] == human("q")
