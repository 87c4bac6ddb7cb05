"""The benches' cost proxy counts what the app bills: our summary calls carry a system prompt beside the text."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from context_managers import Ours, StubModel  # noqa: E402

from summarizer import COMPACTION_SYSTEM_PROMPT, SUMMARY_SYSTEM_PROMPT  # noqa: E402

PROMPT = '<instructions>x</instructions>\n\n<messages>\n<message id="0" role="ai">\nran nmap\n</message>\n</messages>'


def test_a_call_counts_its_system_prompt_and_its_text():
    model = StubModel(SUMMARY_SYSTEM_PROMPT)
    model(PROMPT)
    checkpoint = model.with_system(COMPACTION_SYSTEM_PROMPT)
    checkpoint(PROMPT)
    assert model.calls == 2
    assert model.input_bytes == len(SUMMARY_SYSTEM_PROMPT.encode()) + len(COMPACTION_SYSTEM_PROMPT.encode()) \
        + 2 * len(PROMPT.encode())


def test_a_stub_without_a_system_prompt_counts_the_text_alone():
    model = StubModel()
    model(PROMPT)
    assert (model.calls, model.input_bytes) == (1, len(PROMPT.encode()))


def test_our_managers_send_the_apps_system_prompts():
    manager = Ours(16_384, "agent")
    manager.model(PROMPT)
    manager.checkpoint_model(PROMPT)
    assert manager.model.input_bytes == len(SUMMARY_SYSTEM_PROMPT.encode()) + len(COMPACTION_SYSTEM_PROMPT.encode()) \
        + 2 * len(PROMPT.encode())
