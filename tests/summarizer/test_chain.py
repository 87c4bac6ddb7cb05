"""Chain AST: parsing (strict and force), sizes and round trip — PentAGI `cast` facts 1-9, 12, 13."""
from __future__ import annotations

import pytest

from summarizer.chain.messages import MessageError
from summarizer.chain.ops import append_human
from summarizer.chain.parse import (
    COMPLETION,
    REQUEST_RESPONSE,
    SUMMARIZATION,
    SUMMARIZATION_TOOL,
    UNHANDLED_CALL_TEXT,
    BodyPair,
    ChainError,
    body_pair_from_messages,
    check_invariants,
    parse_chain,
)
from tests.summarizer.engine_builders import ai, call, human, system, tool


def test_an_empty_chain_has_no_sections_and_renders_empty():
    """Fact 1."""
    ast = parse_chain([])
    assert ast.sections == [] and ast.size == 0 and ast.to_messages() == []


def test_a_system_only_chain_is_one_section_with_a_system_header():
    """Fact 2."""
    ast = parse_chain([system()])
    assert len(ast.sections) == 1
    assert ast.sections[0].header.system is not None and ast.sections[0].header.human is None
    assert ast.size > 0


def test_headers_take_system_and_human_and_a_text_reply_is_a_completion():
    """Fact 2."""
    assert len(parse_chain([human("hi")]).sections) == 1
    both = parse_chain([system(), human("hi")]).sections
    assert len(both) == 1 and both[0].header.system and both[0].header.human
    chain = [system(), human("hi"), ai("hello")]
    ast = parse_chain(chain)
    assert [p.kind for p in ast.sections[0].body] == [COMPLETION]
    assert len(ast.to_messages()) == len(chain)


def test_an_unanswered_call_is_an_error_strictly_and_answered_in_force_mode():
    """Fact 3."""
    chain = [system(), human("go"), ai(None, call("tool-1"))]
    with pytest.raises(ChainError, match="tool-1"):
        parse_chain(chain)
    pair = parse_chain(chain, force=True).sections[0].body[0]
    assert pair.kind == REQUEST_RESPONSE and len(pair.tools) == 1
    assert pair.tools[0] == {"role": "tool", "tool_call_id": "tool-1", "name": "terminal",
                             "content": UNHANDLED_CALL_TEXT}


def test_force_mode_answers_every_missing_call_and_the_result_parses_strictly():
    """Fact 3."""
    two = [system(), human("go"), ai(None, call("b"), call("a"))]
    pair = parse_chain(two, force=True).sections[0].body[0]
    assert [t["tool_call_id"] for t in pair.tools] == ["a", "b"]  # sorted, as PentAGI does
    half = [system(), human("go"), ai(None, call("a"), call("b")), tool("a", "done")]
    repaired = parse_chain(half, force=True).to_messages()
    pair = parse_chain(repaired).sections[0].body[0]
    assert sorted(pair.response_ids()) == ["a", "b"] and pair.is_valid()


def test_a_new_human_after_answers_starts_a_new_section():
    """Fact 4."""
    chain = [system(), human("q1"), ai("a1"), human("q2"), ai(None, call("c1")), tool("c1", "out")]
    ast = parse_chain(chain)
    assert len(ast.sections) == 2
    s0, s1 = ast.sections
    assert s0.header.system and s0.header.human and [p.kind for p in s0.body] == [COMPLETION]
    assert s1.header.system is None and s1.header.human["content"] == "q2"
    assert [p.kind for p in s1.body] == [REQUEST_RESPONSE] and len(s1.body[0].tools) == 1
    assert len(ast.to_messages()) == len(chain)


def test_two_humans_in_a_row_fail_strictly_and_merge_in_force_mode():
    """Fact 5 (Resolution 8: merged content is a list of text parts)."""
    chain = [system(), human("first"), human("second")]
    with pytest.raises(ChainError, match="two user messages"):
        parse_chain(chain)
    ast = parse_chain(chain, force=True)
    assert len(ast.sections) == 1
    assert ast.sections[0].header.human["content"] == [{"type": "text", "text": "first"},
                                                       {"type": "text", "text": "second"}]
    assert ast.lineage() == [[0], [1, 2]]


def test_a_tool_message_after_a_completion_is_dropped_in_force_mode():
    """Fact 6."""
    chain = [system(), human("q"), ai("text"), tool("x", "stray")]
    with pytest.raises(ChainError):
        parse_chain(chain)
    ast = parse_chain(chain, force=True)
    assert len(ast.sections) == 1 and len(ast.sections[0].body) == 1
    assert len(ast.to_messages()) < len(chain)


def _summary_call_pair(call_id: str = "call_sum") -> list[dict]:
    return [ai(None, call(call_id, SUMMARIZATION_TOOL, "{}")), tool(call_id, "earlier work")]


def test_a_call_to_the_summary_tool_is_a_summarization_pair():
    """Fact 7."""
    chain = [system(), human("q"), *_summary_call_pair(), ai("thinking"),
             ai(None, call("w1", "get_weather")), tool("w1", "sunny")]
    body = parse_chain(chain).sections[0].body
    assert [p.kind for p in body] == [SUMMARIZATION, COMPLETION, REQUEST_RESPONSE]
    assert body[0].is_valid()
    assert all(c["function"]["name"] == SUMMARIZATION_TOOL for c in body[0].ai["tool_calls"])


def test_a_summarization_call_without_answer_is_repaired_in_force_mode():
    """Fact 7."""
    chain = [system(), human("q"), ai(None, call("s1", SUMMARIZATION_TOOL, "{}"))]
    with pytest.raises(ChainError):
        parse_chain(chain)
    pair = parse_chain(chain, force=True).sections[0].body[0]
    assert pair.kind == SUMMARIZATION and pair.is_valid()


def test_sizes_are_utf8_bytes_of_texts_urls_calls_and_results():
    """Fact 8 (tool result counts the matching call's name, §5)."""
    assert parse_chain([human("Hello world")]).size == 11
    assert parse_chain([human("héllo")]).size == 6
    url = "https://example.org/a.png"
    image = {"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]}
    assert parse_chain([image]).size == len(url)
    pair = parse_chain([human("q"), ai(None, call("id1", "nmap", '{"t": 1}')), tool("id1", "open")]).sections[0].body[0]
    call_size = len("id1") + len("function") + len("nmap") + len('{"t": 1}')
    assert pair.size == call_size + len("id1") + len("nmap") + len("open")


def test_reasoning_is_never_counted():
    """Fact 8 / §5."""
    plain = parse_chain([human("q"), ai("a", call("c", "f", "{}")), tool("c", "r")])
    signed = parse_chain([human("q"), ai("a", call("c", "f", "{}", {"signature": "c2ln"}),
                                        reasoning={"content": "long thinking", "signature": "eHl6"}), tool("c", "r")])
    assert plain.size == signed.size


def test_appending_a_human_and_a_completion_grow_the_size_exactly():
    """Fact 8."""
    ast = parse_chain([system("sys")])
    before = ast.size
    append_human(ast, "Human message")
    assert ast.size == before + 13
    ast.sections[0].body.append(BodyPair(ai("twelve bytes")))
    assert ast.size == before + 13 + 12


def test_section_size_is_header_plus_pairs_after_every_operation():
    """Fact 9."""
    ast = parse_chain([system(), human("q"), ai("a"), human("q2"), ai(None, call("c")), tool("c", "r")])
    append_human(ast, "more")
    ast.sections[-1].body.append(BodyPair(ai("b")))
    for sec in ast.sections:
        assert sec.size == sec.header.size + sum(p.size for p in sec.body)
    assert ast.size == sum(s.size for s in ast.sections)


def test_a_pair_built_from_messages_takes_its_kind_from_parts_only():
    """Fact 12."""
    pair = body_pair_from_messages([ai("text"), tool("x", "r")])
    assert pair.kind == COMPLETION and len(pair.tools) == 1 and not pair.is_valid()
    with pytest.raises(ChainError):
        body_pair_from_messages([human("q")])
    with pytest.raises(ChainError):
        body_pair_from_messages([])
    with pytest.raises(ChainError):
        body_pair_from_messages([ai(None, call("c")), human("q")])


def test_null_function_calls_before_text_are_removed():
    """Fact 13."""
    msg = {"role": "assistant", "content": "kept text",
           "tool_calls": [{"id": "n1", "type": "function", "function": None},
                          {"id": "n2", "type": "function", "function": None}]}
    pair = parse_chain([human("q"), msg]).sections[0].body[0]
    assert pair.kind == COMPLETION and "tool_calls" not in pair.ai and pair.ai["content"] == "kept text"


def test_null_function_calls_after_the_first_real_call_are_kept():
    """§1.2: scanning stops at the first valid call."""
    msg = ai(None, call("c1"), {"id": "n1", "type": "function", "function": None})
    pair = parse_chain([human("q"), msg, tool("c1", "r")]).sections[0].body[0]
    assert [c["id"] for c in pair.ai["tool_calls"]] == ["c1", "n1"]


def test_a_system_message_in_the_middle_is_an_error_even_in_force_mode():
    """§1.3."""
    for force in (False, True):
        with pytest.raises(ChainError, match="system"):
            parse_chain([human("q"), system()], force=force)


def test_a_chain_must_start_with_system_or_user_even_in_force_mode():
    """§1.3."""
    with pytest.raises(ChainError, match="first message"):
        parse_chain([ai("hi")], force=True)


def test_a_result_without_a_call_gets_a_synthetic_call_in_force_mode():
    """§1.3 unmatched-response check, Resolution 5."""
    chain = [human("q"), ai(None, call("c1")), tool("c1", "r"), tool("zz", "orphan", name="grep")]
    with pytest.raises(ChainError, match="zz"):
        parse_chain(chain)
    pair = parse_chain(chain, force=True).sections[0].body[0]
    assert pair.ai["tool_calls"][-1] == {"id": "zz", "type": "function",
                                           "function": {"name": "grep", "arguments": "{}"}}
    assert pair.is_valid()
    assert pair.size == sum(len(x) for x in ("c1", "function", "terminal", '{"cmd": "ls"}', "c1", "terminal", "r",
                                             "zz", "function", "grep", "{}", "zz", "grep", "orphan"))


def test_a_human_after_body_of_a_system_only_section_is_moved_into_its_header_in_force_mode():
    """§1.3: force sets the header human; the current pair stays open."""
    chain = [system(), ai("a"), human("late")]
    with pytest.raises(ChainError):
        parse_chain(chain)
    ast = parse_chain(chain, force=True)
    assert len(ast.sections) == 1 and ast.to_messages() == [system(), human("late"), ai("a")]


def test_a_new_section_answers_the_previous_pending_calls_in_force_mode():
    """§1.3: the pending-call check runs when a human starts a new section."""
    ast = parse_chain([human("q"), ai(None, call("c1")), human("q2")], force=True)
    assert ast.sections[0].body[0].tools[0]["tool_call_id"] == "c1"
    assert len(ast.sections) == 2


def test_round_trip_is_exact_including_extension_keys():
    """§1.4: messages -> AST -> messages is lossless, unknown keys kept."""
    chain = [system(), {"role": "user", "content": [{"type": "text", "text": "a"}], "name": "bob"},
             {"role": "assistant", "content": "", "refusal": None, "reasoning": {"content": "r", "signature": None},
              "tool_calls": [call("c", reasoning={"signature": "c2ln"})]},
             tool("c", "out", name="terminal")]
    assert parse_chain(chain).to_messages() == chain
    assert check_invariants(parse_chain(chain)) == []


def test_invalid_messages_are_reported_with_index_field_and_reason():
    """§5 validation."""
    cases = [
        ([{"role": "robot", "content": "x"}], 0, "role"),
        ([human("q"), {"role": "tool", "content": "x"}], 1, "tool_call_id"),
        ([human("q"), {"role": "assistant", "content": 5}], 1, "content"),
        ([human("q"), ai(None, {"id": "c", "type": "function", "function": {"name": "f", "arguments": {}}})],
         1, "tool_calls[0].function.arguments"),
        ([{"role": "user", "content": [{"type": "audio"}]}], 0, "content[0].type"),
        ([{"role": "user", "content": None}], 0, "content"),
        ([{"role": "user", "content": "q", "tool_calls": []}], 0, "tool_calls"),
    ]
    for chain, index, field in cases:
        with pytest.raises(MessageError) as err:
            parse_chain(chain)
        assert (err.value.index, err.value.field) == (index, field)
        assert err.value.reason
