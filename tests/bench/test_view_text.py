"""The benches read a view as the model does: the text of every content part, not a JSON dump of the parts."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from compare_context_managers import retention, view_text  # noqa: E402


def test_a_multi_part_message_is_read_as_its_text_parts():
    summary = "## Critical context\n- 502: ESSOS\\krbtgt (SidTypeUser)\n- \\\\dc01\\SYSVOL\\x"
    view = [{"role": "user", "content": [{"type": "text", "text": summary}, {"type": "text", "text": "go on"}]}]
    text = view_text(view)
    assert "ESSOS\\krbtgt" in text and "\\\\dc01\\SYSVOL\\x" in text and "\n- 502:" in text


def test_identifiers_quoted_in_a_multi_part_summary_count_as_retained():
    raw = [{"role": "tool", "tool_call_id": "c1", "content": "share \\\\dc01\\SYSVOL\\x at 10.0.0.5"}]
    view = [{"role": "user", "content": [{"type": "text", "text": "- \\\\dc01\\SYSVOL\\x on 10.0.0.5"}]}]
    assert retention(raw, view) == (2, 2)


def test_used_retention_counts_only_the_identifiers_the_agent_quoted():
    raw = [{"role": "tool", "tool_call_id": "c1", "content": "banner 4f3c2a1b9e8d7c6b at 10.0.0.5"},
           {"role": "assistant", "content": "Next: ssh to 10.0.0.5."}]
    view = [{"role": "user", "content": "- 10.0.0.5 runs ssh"}]
    assert retention(raw, view) == (2, 1)  # the hex banner is lost, the address is kept
    assert retention(raw, view, used_only=True) == (1, 1)  # only the address counts: the agent wrote it
