"""Manage mode and the after-turn summarization racing on one chain, interleaved explicitly (no timing luck)."""
from __future__ import annotations

import json
from typing import Any

import pytest

from flows.gateway.fit import gateway_view_prepare
from flows.gateway.threads import gateway_answer_append, gateway_thread
from flows.models import ModelWindow
from flows.pipeline import chain_summarize
from summarizer import count_tokens
from tests.gateway.agent_loop import SYSTEM, pairing, tool_output, tool_pairs_valid

pytestmark = pytest.mark.django_db

MODEL = "race-model"
WINDOW_TOKENS = 6000


@pytest.fixture
def user(django_user_model: Any) -> Any:
    ModelWindow.objects.create(model=MODEL, context_window=WINDOW_TOKENS, max_output_tokens=1000)
    return django_user_model.objects.create_user("race-user", password="x")


def _call(turn: int) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": [{
        "id": f"call_{turn}", "type": "function",
        "function": {"name": "run_command", "arguments": json.dumps({"cmd": f"nmap -p {turn}"})}}]}


def _request(user: Any, history: list[dict[str, Any]]) -> tuple[Any, list[dict[str, Any]]]:
    """One manage-mode request as the gateway makes it; what goes upstream must fit and pair its tool calls."""
    threaded = gateway_thread(user=user, messages=history, model_name=MODEL)
    sent = gateway_view_prepare(chain_id=threaded.chain.pk).messages
    assert tool_pairs_valid(sent), pairing(sent)
    assert count_tokens(sent, model="gpt-4o") <= WINDOW_TOKENS
    return threaded, sent


def test_a_late_after_turn_summary_never_splits_the_pending_tool_call_from_its_result(user: Any) -> None:
    history: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}]
    for turn in range(20):
        history.append({"role": "user", "content": f"step {turn}, scan the next port range"})
        threaded, sent = _request(user, history)
        answer = _call(turn)
        gateway_answer_append(chain_id=threaded.chain.pk, expected_head=threaded.head_hash, message=answer)
        history.append(answer)
        # the worker's summarization of the previous turn runs late: after the answer with its open call
        chain_summarize(chain_id=threaded.chain.pk)
        history.append({"role": "tool", "tool_call_id": f"call_{turn}", "content": tool_output("nmap", turn)})
        threaded, sent = _request(user, history)
        assert sent[-1] == history[-1]  # the real result, right after its call
        answer = {"role": "assistant", "content": f"step {turn} done"}
        gateway_answer_append(chain_id=threaded.chain.pk, expected_head=threaded.head_hash, message=answer)
        history.append(answer)
    assert count_tokens(history, model="gpt-4o") > WINDOW_TOKENS  # the fits above had work to do
