"""AST helpers around summarization (§1.7, §2.d) — facts 10, 11, 14-18."""
from __future__ import annotations

import base64
import random
import re

import pytest

from summarizer.chain.nodes import BodyPair, ChainAST, Header, Section
from summarizer.chain.ops import (
    add_tool_response,
    append_human,
    clear_reasoning,
    contains_tool_call_reasoning,
    extract_reasoning_message,
    find_tool_call_responses,
    normalize_tool_call_ids,
    sanitize_tool_call_arguments,
)
from summarizer.chain.parse import SUMMARIZATION, SUMMARIZATION_TOOL, ChainError, parse_chain
from summarizer.chain.sanitize import escape_control_chars, sanitize_arguments
from summarizer.chain.toolcall_ids import (
    CHARSETS,
    detect_id_template,
    generate_id,
    id_matches,
    parse_id_template,
)
from summarizer.passes.shapes import FAKE_SIGNATURE, SUMMARY_ARGUMENTS, summarization_pair
from tests.summarizer.engine_builders import ai, call, human, system, tool


def test_append_human_covers_all_four_cases():
    """Fact 10."""
    empty = parse_chain([])
    append_human(empty, "hi")
    assert len(empty.sections) == 1 and empty.sections[0].header.human["content"] == "hi"
    sys_only = parse_chain([system()])
    append_human(sys_only, "hi")
    assert len(sys_only.sections) == 1 and sys_only.sections[0].header.human["content"] == "hi"
    waiting = parse_chain([system(), human("Initial")])
    append_human(waiting, "Additional")
    parts = waiting.sections[0].header.human["content"]
    assert [p["text"] for p in parts] == ["Initial", "Additional"]
    answered = parse_chain([system(), human("q"), ai("a")])
    append_human(answered, "next")
    assert len(answered.sections) == 2 and answered.sections[1].header.system is None


def _rr_chain() -> list[dict]:
    return [system(), human("q"), ai(None, call("c1"), call("c2")), tool("c1", "old"), tool("c2", "two")]


def test_add_tool_response_replaces_an_existing_answer():
    """Fact 11."""
    ast = parse_chain(_rr_chain())
    add_tool_response(ast, "c1", "terminal", "new")
    found = find_tool_call_responses(ast, "c1")
    assert len(found) == 1 and found[0]["content"] == "new"


def test_add_tool_response_adds_an_answer_for_a_known_call_and_rejects_unknown_ids():
    """Fact 11."""
    half_answered = BodyPair(ai(None, call("c1"), call("c2")), (tool("c1", "r1"),))
    ast = ChainAST([Section(Header(human=human("q")), [half_answered])])
    add_tool_response(ast, "c2", "terminal", "r2")
    assert find_tool_call_responses(ast, "c2")[0]["content"] == "r2"
    assert ast.sections[0].body[0].is_valid()
    with pytest.raises(ChainError, match="nope"):
        add_tool_response(ast, "nope", "x", "y")


def test_the_summarization_pair_has_the_fixed_call_and_one_matching_answer():
    """Fact 14 (and §1.5's 212 + summary bytes)."""
    pair = summarization_pair("the summary")
    call_ = pair.ai["tool_calls"][0]
    assert call_["function"] == {"name": SUMMARIZATION_TOOL, "arguments": SUMMARY_ARGUMENTS}
    assert "reasoning" not in call_ and "reasoning" not in pair.ai
    assert len(pair.tools) == 1 and pair.tools[0]["tool_call_id"] == call_["id"]
    assert pair.tools[0]["name"] == SUMMARIZATION_TOOL and pair.tools[0]["content"] == "the summary"
    assert call_["id"].startswith("call_") and len(call_["id"]) == 29
    assert pair.kind == SUMMARIZATION and pair.is_valid()
    assert pair.size == 212 + len("the summary")
    assert summarization_pair("").is_valid()


def test_the_fake_signature_is_the_skip_validator_marker():
    """Fact 14 / §2.d."""
    pair = summarization_pair("s", fake_signature=True)
    signature = pair.ai["tool_calls"][0]["reasoning"]["signature"]
    assert signature == FAKE_SIGNATURE
    assert base64.b64decode(signature) == b"skip_thought_signature_validator"


def test_tool_call_reasoning_detection_ignores_text_reasoning():
    """Fact 15."""
    text_only = [ai("t", call("c"), reasoning={"content": "think", "signature": None})]
    assert contains_tool_call_reasoning(text_only) is False
    signed = [ai("t", call("a")), ai(None, call("b"), call("c", reasoning={"signature": "c2ln"}))]
    assert contains_tool_call_reasoning(signed) is True


def test_reasoning_extraction_takes_the_first_non_empty_text_reasoning():
    """Fact 16."""
    msgs = [ai("no reasoning"), ai("empty", reasoning={"content": "", "signature": None}),
            ai("first", reasoning={"content": "why 1", "signature": "s1"}),
            ai("second", reasoning={"content": "why 2"})]
    assert extract_reasoning_message(msgs) == {"role": "assistant", "content": "first",
                                               "reasoning": {"content": "why 1", "signature": "s1"}}
    assert extract_reasoning_message([ai("x"), ai("y", reasoning={})]) is None


def test_normalize_replaces_foreign_ids_and_remaps_answers():
    """Fact 17."""
    ast = parse_chain([human("q"), ai(None, call("call_abc")), tool("call_abc", "r")])
    assert normalize_tool_call_ids(ast, "toolu_{r:24:b}", random.Random(1)) == 1
    pair = ast.sections[0].body[0]
    new_id = pair.ai["tool_calls"][0]["id"]
    assert new_id.startswith("toolu_") and len(new_id) == 30 and pair.tools[0]["tool_call_id"] == new_id
    ast = parse_chain([human("q"), ai(None, call("call_abc")), tool("call_abc", "r")])
    normalize_tool_call_ids(ast, "call_{r:24:x}")
    assert len(ast.sections[0].body[0].ai["tool_calls"][0]["id"]) == 29


def test_normalize_keeps_ids_that_fit_and_covers_summarization_pairs():
    """Fact 17."""
    good = generate_id("call_{r:24:x}", "terminal")
    chain = [human("q"), ai(None, call(good)), tool(good, "r"),
             ai(None, call("weird", SUMMARIZATION_TOOL, "{}")), tool("weird", "sum")]
    ast = parse_chain(chain)
    assert normalize_tool_call_ids(ast, "call_{r:24:x}") == 1
    body = ast.sections[0].body
    assert body[0].ai["tool_calls"][0]["id"] == good
    assert body[1].ai["tool_calls"][0]["id"] != "weird" and body[1].is_valid()
    for chain in ([], [system(), human("q"), ai("text")]):
        ast = parse_chain(chain)
        assert normalize_tool_call_ids(ast, "call_{r:24:x}") == 0 and ast.to_messages() == chain


def test_every_template_charset_generates_ids_that_validate():
    """§1.7 template language (x is alphanumeric, not hex)."""
    for name, chars in CHARSETS.items():
        template = f"id_{{r:12:{name}}}_{{f}}"
        value = generate_id(template, "nmap", random.Random(3))
        assert id_matches(value, template, "nmap")
        assert set(value[3:15]) <= set(chars)
    assert not id_matches("call_" + "g" * 24, "call_{r:24:h}")
    assert id_matches("call_" + "g" * 24, "call_{r:24:x}")
    with pytest.raises(ValueError):
        parse_id_template("call_{r:8:q}")


def test_the_template_is_detected_from_the_newest_call_id():
    """Resolution 2."""
    assert detect_id_template([ai(None, call("toolu_01abc"))]) == "toolu_{r:24:b}"
    assert detect_id_template([ai(None, call("toolu_01abc")), ai(None, call("call_x"))]) == "call_{r:24:x}"
    assert detect_id_template([]) == "call_{r:24:x}"


def test_the_json_escaper_fixes_control_characters_inside_strings_only():
    """Fact 18."""
    assert escape_control_chars('{"a": "b"}') == '{"a": "b"}'
    assert escape_control_chars('{"a": "x\ny\rz\tq\bw\fe"}') == '{"a": "x\\ny\\rz\\tq\\bw\\fe"}'
    assert escape_control_chars('{"a": "\x01"}') == '{"a": "\\u0001"}'
    assert escape_control_chars('{\n"a": 1,\t"b": "\n"}') == '{\n"a": 1,\t"b": "\\n"}'
    assert escape_control_chars('{"a": "x\\"\n"}') == '{"a": "x\\"\\n"}'
    assert escape_control_chars('{"a": "\\\\"\n}') == '{"a": "\\\\"\n}'
    assert escape_control_chars("{broken") == "{broken"


def test_the_argument_sanitizer_falls_back_to_an_empty_object():
    """Fact 18."""
    for bad in ("{", '{"input": "ls -la"', ""):
        assert sanitize_arguments(bad) == "{}"
    assert sanitize_arguments("[]") == "[]"
    assert sanitize_arguments('{"cmd": "a\nb"}') == '{"cmd": "a\\nb"}'
    ast = parse_chain([human("q"), ai(None, call("c", args="{")), tool("c", "r")])
    assert sanitize_tool_call_arguments(ast) == 1
    assert ast.sections[0].body[0].ai["tool_calls"][0]["function"]["arguments"] == "{}"


def test_clear_reasoning_strips_text_and_call_reasoning():
    """§1.7."""
    msgs = [ai("t", call("c", reasoning={"signature": "s"}), reasoning={"content": "r"}), tool("c", "x")]
    cleared = clear_reasoning(msgs)
    assert "reasoning" not in cleared[0] and "reasoning" not in cleared[0]["tool_calls"][0]
    assert "reasoning" in msgs[0]  # input untouched
    assert re.fullmatch(r"call_[A-Za-z0-9]{24}", generate_id("call_{r:24:x}"))
