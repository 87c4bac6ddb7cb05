"""Anthropic Messages and OpenAI Responses errors: which are context overflows, and the counts they report.

Each wording is copied from where users reported it (the comment names the issue); the streamed and JSON
shapes around them follow the SDKs' types (anthropic `types/shared/error_response.py`, openai
`types/responses/response_failed_event.py`, `response.py`).
"""
from __future__ import annotations

import json

import pytest

from summarizer.recovery.overflow import is_context_overflow_error, observed_context_limit, observed_token_count
from tests.summarizer.test_overflow_providers import PROVIDERS

RESPONSES_OVERFLOW = ("Your input exceeds the context window of this model. Please adjust your input and try "
                      "again.")  # anomalyco/opencode#6071, dyad-sh/dyad#1672


def anthropic_error(kind: str, message: str) -> str:
    return json.dumps({"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_011C"})


def response_failed(code: str, message: str) -> str:
    return json.dumps({"type": "response.failed", "sequence_number": 7, "response": {
        "id": "resp_1", "object": "response", "status": "failed", "output": [], "incomplete_details": None,
        "error": {"code": code, "message": message}}})


OVERFLOWS = [
    # (case, error text, prompt tokens reported, window reported)
    # https://github.com/anthropics/claude-code/issues/62560 (current wording)
    ("anthropic-prompt-too-long", "Error code: 400 - " + anthropic_error(
        "invalid_request_error", "prompt is too long: 208656 tokens > 200000 maximum"), 208656, 200000),
    # https://github.com/continuedev/continue/issues/6080 (input + max_tokens over the window)
    ("anthropic-input-plus-max-tokens", anthropic_error(
        "invalid_request_error", "input length and `max_tokens` exceed context limit: 199759 + 8192 > 200000, "
        "decrease input length or `max_tokens` and try again"), 199759, 200000),
    # https://github.com/stackblitz/bolt.new/issues/7414 (the same without backticks)
    ("anthropic-input-plus-max-tokens-plain", "input length and max_tokens exceed context limit: 90402 + 116650 > "
     "204648, decrease input length or max_tokens and try again", 90402, 204648),
    # https://github.com/earendil-works/pi/issues/2734 (413 from the 32 MB request cap)
    ("anthropic-413", '413 {"error":{"type":"request_too_large","message":"Request exceeds the maximum size"}}',
     None, None),
    # https://github.com/anthropics/claude-code/issues/6380 (413 worded as the window)
    ("anthropic-413-window", "API Error: 413 " + anthropic_error("invalid_request_error",
                                                                 "Request size exceeds model context window"),
     None, None),
    # https://github.com/anomalyco/opencode/issues/6071 (the error event of a Responses stream)
    ("responses-error-event", json.dumps({"type": "error", "sequence_number": 2, "error": {
        "type": "invalid_request_error", "code": "context_length_exceeded", "message": RESPONSES_OVERFLOW,
        "param": "input"}}), None, None),
    # the same error as a non-streamed 400 body (the-open-agent/openagent#2344)
    ("responses-400", json.dumps({"error": {"message": RESPONSES_OVERFLOW, "type": "invalid_request_error",
                                            "param": "input", "code": "context_length_exceeded"}}), None, None),
    # inside response.failed, where Codex reads response.error.code (codex-rs sse/responses.rs)
    ("responses-failed", response_failed("context_length_exceeded", RESPONSES_OVERFLOW), None, None),
]

NOT_OVERFLOWS = [
    # https://github.com/anthropics/claude-code/issues/3558
    ("anthropic-529", "API Error (529 " + anthropic_error("overloaded_error", "Overloaded") + ")"),
    # https://github.com/anthropics/claude-code/issues/39757 (newer wording with a link)
    ("anthropic-529-link", "529 " + anthropic_error("overloaded_error",
                                                    "Overloaded. https://docs.claude.com/en/api/errors")),
    ("anthropic-429", "Error code: 429 - " + anthropic_error(
        "rate_limit_error", "This request would exceed the rate limit for your organization of 400,000 input "
        "tokens per minute.")),
    # https://github.com/openai/codex/issues/797 (a Responses rate limit, as response.failed would carry it)
    ("responses-rate-limit", response_failed("rate_limit_exceeded", "Rate limit reached for o4-mini in "
                                             "organization org-x on requests per day (RPD): Limit 200, Used 200, "
                                             "Requested 1. Please try again in 7m12s.")),
    # an answer cut short by its own output budget or a filter (openai `response.py` IncompleteDetails)
    ("responses-incomplete-max-output", json.dumps({
        "id": "resp_2", "object": "response", "status": "incomplete", "max_output_tokens": 16,
        "incomplete_details": {"reason": "max_output_tokens"}, "error": None,
        "usage": {"input_tokens": 180000, "output_tokens": 16}})),
    ("responses-incomplete-filter", json.dumps({"type": "response.incomplete", "response": {
        "status": "incomplete", "incomplete_details": {"reason": "content_filter"}}})),
    # an Anthropic answer that stopped at max_tokens (anthropic `types/stop_reason.py`)
    ("anthropic-max-tokens-stop", json.dumps({"type": "message_delta", "delta": {"stop_reason": "max_tokens"},
                                              "usage": {"output_tokens": 4096}})),
]


@pytest.mark.parametrize("case,text,tokens,limit", OVERFLOWS, ids=[o[0] for o in OVERFLOWS])
def test_anthropic_and_responses_context_errors_are_overflows_with_their_counts(case, text, tokens, limit):
    assert is_context_overflow_error(text) is True
    assert observed_token_count(text) == tokens
    assert observed_context_limit(text) == limit


@pytest.mark.parametrize("case,text", NOT_OVERFLOWS, ids=[n[0] for n in NOT_OVERFLOWS])
def test_overload_rate_limits_and_incomplete_answers_are_never_overflows(case, text):
    assert is_context_overflow_error(text) is False


LIMITS = {"openai": 8192, "azure-openai": 128000, "anthropic": 200000, "gemini": 131072, "vertex": 65536,
          "mistral": 32768, "deepseek": 65536, "moonshot": 262144, "openrouter": 200000, "litellm": 272000,
          "llama.cpp": 8192, "llama-cpp-python": 2048, "vllm": 16384, "lm-studio": 32768, "tgi": 65537}


@pytest.mark.parametrize("provider,message", [(p, m) for p, m, _ in PROVIDERS], ids=[p[0] for p in PROVIDERS])
def test_the_window_a_provider_names_in_its_overflow_error_is_read(provider, message):
    assert observed_context_limit(message) == LIMITS.get(provider)
