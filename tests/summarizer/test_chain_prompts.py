"""The summary prompt layout (§2.e cases 1-3, Resolution 6)."""
from __future__ import annotations

import pytest

from summarizer.passes.prompts import (
    INSTRUCTIONS_MESSAGES_ONLY,
    INSTRUCTIONS_TASKS_ONLY,
    INSTRUCTIONS_WITH_TASKS,
    PromptError,
    build_summary_prompt,
)
from tests.summarizer.engine_builders import ai, call, human, system, tool


def test_case_one_lists_tasks_then_messages():
    prompt = build_summary_prompt([human("scan it")], [ai("ok", call("c1", "nmap", '{"t": 1}')), tool("c1", "22 open")])
    assert prompt == (
        f"<instructions>{INSTRUCTIONS_WITH_TASKS}</instructions>\n\n"
        "<tasks>\n<task id=\"0\">\nscan it\n</task>\n</tasks>\n"
        "<messages>\n"
        "<message id=\"0\" role=\"ai\">\n<content part=\"0\">\nok\n</content>\n"
        "<tool_call name=\"nmap\" part=\"1\">\n{\"t\": 1}\n</tool_call>\n</message>\n"
        "<message id=\"1\" role=\"tool\">\n<tool_call_response name=\"nmap\" part=\"0\">\n22 open\n"
        "</tool_call_response>\n</message>\n"
        "</messages>")


def test_case_two_has_only_messages():
    prompt = build_summary_prompt([], [ai("answer")])
    assert prompt == (f"<instructions>{INSTRUCTIONS_MESSAGES_ONLY}</instructions>\n\n"
                      "<messages>\n<message id=\"0\" role=\"ai\">\n<content part=\"0\">\nanswer\n</content>\n"
                      "</message>\n</messages>")


def test_case_three_has_only_tasks_and_images_are_described():
    image = {"role": "user", "content": [{"type": "text", "text": "look"},
                                         {"type": "image_url",
                                          "image_url": {"url": "http://i/x.png", "detail": "low"}}]}
    prompt = build_summary_prompt([human("first"), image], [])
    assert prompt == (f"<instructions>{INSTRUCTIONS_TASKS_ONLY}</instructions>\n\n"
                      "<tasks>\n<task id=\"0\">\nfirst\n</task>\n"
                      "<task id=\"1\">\nlook\n<image url=\"http://i/x.png\">\nlow\n</image>\n</task>\n</tasks>\n")


def test_a_tasks_only_prompt_ends_with_the_newline_after_its_tasks_block():
    """§2.e layout: `</tasks>\\n` always; only `</messages>` has no trailing newline."""
    assert build_summary_prompt([human("q")], []).endswith("</task>\n</tasks>\n")
    assert build_summary_prompt([human("q")], [ai("a")]).endswith("</message>\n</messages>")


def test_an_image_without_detail_has_no_empty_detail_line():
    """§2.e: the detail line is written only when there is a detail (PentAGI skips an empty one)."""
    image = {"type": "image_url", "image_url": {"url": "http://i/x.png"}}
    task_prompt = build_summary_prompt([{"role": "user", "content": [image]}], [])
    assert '<task id="0">\n<image url="http://i/x.png">\n</image>\n</task>\n' in task_prompt
    ai_prompt = build_summary_prompt([], [{"role": "assistant", "content": [image]}])
    assert '<image url="http://i/x.png" part="0">\n</image>\n' in ai_prompt


def test_a_kept_null_function_call_still_takes_its_part_number():
    """§1.2 keeps null-function calls after the first real one; §2.e numbers every part, rendering only real calls."""
    null_call = {"id": "c2", "type": "function", "function": None}
    msg = ai("t", call("c1", "nmap"), null_call, call("c3", "curl"))
    prompt = build_summary_prompt([], [msg])
    assert '<tool_call name="nmap" part="1">' in prompt and '<tool_call name="curl" part="3">' in prompt
    assert 'part="2"' not in prompt


def test_non_human_entries_are_skipped_but_keep_their_index():
    prompt = build_summary_prompt([system("sys"), human("q")], [])
    assert '<task id="1">\nq\n' in prompt and '<task id="0">' not in prompt and "sys" not in prompt


def test_reasoning_never_reaches_the_prompt():
    msg = ai("visible", call("c", reasoning={"signature": "SIG"}), reasoning={"content": "SECRET", "signature": "S2"})
    prompt = build_summary_prompt([], [msg, tool("c", "r")])
    assert "SECRET" not in prompt and "SIG" not in prompt and "visible" in prompt


def test_human_messages_inside_the_message_list_use_the_human_role():
    assert 'role="human"' in build_summary_prompt([], [human("q")])


def test_an_empty_request_is_an_error():
    with pytest.raises(PromptError):
        build_summary_prompt([], [])
