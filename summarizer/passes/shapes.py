"""The two shapes a summary takes in a chain (PentAGI §2.d).

Tool activity is replaced by a fake delegated task (a call to `execute_task_and_return_summary` and its
answer), so the model keeps seeing the call/result rhythm; plain text is replaced by a prefixed answer.
The fake signature tells Gemini-style providers to skip thought-signature validation on the fake call.
"""
from __future__ import annotations

import base64
import random
from typing import Any

from summarizer.chain.nodes import SUMMARIZATION_TOOL, SUMMARY_PREFIX, BodyPair, Lineage
from summarizer.chain.toolcall_ids import DEFAULT_ID_TEMPLATE, generate_id

__all__ = [
    "FAKE_SIGNATURE_BYTES", "FAKE_SIGNATURE", "SUMMARY_ARGUMENTS", "summarization_pair", "prefixed_completion",
]

FAKE_SIGNATURE_BYTES = b"skip_thought_signature_validator"
FAKE_SIGNATURE = base64.b64encode(FAKE_SIGNATURE_BYTES).decode("ascii")
SUMMARY_ARGUMENTS = '{"question": "delegate and execute the task, then return the summary of the result"}'


def summarization_pair(summary: str, *, id_template: str = DEFAULT_ID_TEMPLATE, call_id: str | None = None,
                       fake_signature: bool = False, reasoning_message: dict[str, Any] | None = None,
                       rng: random.Random | None = None, lineage: Lineage = ()) -> BodyPair:
    """AI message (optionally the copied reasoning text first) calling the summary tool + its answer."""
    call_id = call_id or generate_id(id_template, SUMMARIZATION_TOOL, rng)
    call: dict[str, Any] = {"id": call_id, "type": "function",
                            "function": {"name": SUMMARIZATION_TOOL, "arguments": SUMMARY_ARGUMENTS}}
    if fake_signature:
        call["reasoning"] = {"signature": FAKE_SIGNATURE}
    ai: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
    if reasoning_message is not None:  # the copied text part keeps its visible text and its reasoning
        ai = {"role": "assistant", "content": reasoning_message.get("content"),
              "reasoning": reasoning_message["reasoning"], "tool_calls": [call]}
    tool = {"role": "tool", "tool_call_id": call_id, "name": SUMMARIZATION_TOOL, "content": summary}
    return BodyPair(ai, (tool,), (lineage, lineage))


def prefixed_completion(summary: str, *, lineage: Lineage = ()) -> BodyPair:
    return BodyPair({"role": "assistant", "content": SUMMARY_PREFIX + summary}, (), (lineage,))
