"""One real context-overflow message per provider (recognised, with the observed count read), and real
rate-limit / quota / billing / auth messages that must never be taken for overflow.

Each message is copied from where users reported it; the comment names the source (issue URL).
"""
from __future__ import annotations

import pytest

from summarizer.recovery.overflow import is_context_overflow_error, observed_token_count

PROVIDERS = [
    # (provider, message, observed prompt tokens or None)
    # https://github.com/crewAIInc/crewAI-examples/issues/121
    ("openai", "Error code: 400 - {'error': {'message': \"This model's maximum context length is 8192 tokens. "
     "However, your messages resulted in 8227 tokens. Please reduce the length of the messages.\", 'type': "
     "'invalid_request_error', 'param': 'messages', 'code': 'context_length_exceeded'}}", 8227),
    # https://github.com/Azure/azure-sdk-for-python/issues/40986
    ("azure-openai", "(context_length_exceeded) This model's maximum context length is 128000 tokens. However, you "
     "requested 1124171 tokens (124171 in the messages, 1000000 in the completion). Please reduce the length of the "
     "messages or completion.", 1124171),
    # https://github.com/sojohnnysaid/project-guide/issues/2
    ("anthropic", "anthropic.BadRequestError: Error code: 400 - {'type': 'error', 'error': {'type': "
     "'invalid_request_error', 'message': 'prompt is too long: 208656 tokens > 200000 maximum'}}", 208656),
    # https://github.com/google-gemini/gemini-cli/issues/12214
    ("gemini", '{"error": {"code": 400, "message": "The input token count (134123) exceeds the maximum number of '
     'tokens allowed (131072).", "status": "INVALID_ARGUMENT"}}', 134123),
    # https://github.com/google-gemini/gemini-cli/issues/27197 (Vertex, google.genai)
    ("vertex", "google.genai.errors.ClientError: 400 INVALID_ARGUMENT. {'error': {'code': 400, 'message': 'The input "
     "token count (81881) exceeds the maximum number of tokens allowed (65536).', 'status': 'INVALID_ARGUMENT'}}",
     81881),
    # https://github.com/aws-samples/assessment-generator/issues/2
    ("bedrock", "ValidationException: Input is too long for requested model.", None),
    # https://github.com/BerriAI/litellm/pull/21647 (the Mistral message it maps)
    ("mistral", "Prompt contains 40141 tokens and 0 draft tokens, too large for model with 32768 maximum context "
     "length", 40141),
    # https://github.com/OpenHands/OpenHands/issues/1902
    ("groq", "GroqException - Error code: 400 - {'error': {'message': 'Please reduce the length of the messages or "
     "completion.', 'type': 'invalid_request_error', 'param': 'messages', 'code': 'context_length_exceeded'}}", None),
    # https://github.com/FoundationAgents/OpenManus/issues/79
    ("deepseek", "Error code: 400 - {'error': {'message': \"This model's maximum context length is 65536 tokens. "
     "However, you requested 66343 tokens (62247 in the messages, 4096 in the completion). Please reduce the length "
     "of the messages or completion.\", 'type': 'invalid_request_error', 'param': None, 'code': "
     "'invalid_request_error'}}", 66343),
    # https://github.com/agentscope-ai/QwenPaw/issues/6255
    ("dashscope", "Error code: 400 - {'error': {'code': 'invalid_parameter_error', 'message': '<400> "
     "InternalError.Algo.InvalidParameter: Range of input length should be [1, 983616]', 'param': None, 'type': "
     "'invalid_request_error'}}", None),
    # Kimi's wording as other agents' overflow tables record it (error, status code: 400, Invalid request)
    ("moonshot", "error, status code: 400, message: Invalid request: Your request exceeded model token limit: 262144 "
     "(requested: 291351)", 291351),
    # https://github.com/earendil-works/pi/issues/8991
    ("zhipu", '400: {"code":"1261","message":"Prompt exceeds max length"}', None),
    # https://github.com/agno-agi/agno/issues/3980
    ("openrouter", "This endpoint's maximum context length is 200000 tokens. However, you requested about 5028244 "
     "tokens (4945291 of text input, 2953 of tool input, 80000 in the output). Please reduce the length of either "
     "one, or use the \"middle-out\" transform to compress your prompt automatically.", 5028244),
    # https://github.com/BerriAI/litellm/issues/18927
    ("litellm", "ContextWindowExceededError: OpenAIException - Input tokens exceed the configured limit of 272000 "
     "tokens.", None),
    # https://github.com/nano-step/nano-brain/issues/208
    ("ollama", 'ollama: unexpected status 400: {"error":"the input length exceeds the context length"}', None),
    # https://github.com/oobabooga/textgen/issues/7257
    ("llama.cpp", '{"error":{"code":400,"message":"the request exceeds the available context size. try increasing '
     'the context size or enable context shift","type":"exceed_context_size_error","n_prompt_tokens":14429,'
     '"n_ctx":8192}}', 14429),
    # https://github.com/fedora-copr/logdetective/issues/100
    ("llama-cpp-python", "Exception: Requested tokens (2138) exceed context window of 2048", 2138),
    # https://github.com/vllm-project/vllm/issues/20409
    ("vllm", "Error code: 400 - {'object': 'error', 'message': \"This model's maximum context length is 16384 tokens. "
     "However, you requested 19591 tokens (9591 in the messages, 10000 in the completion). Please reduce the length "
     "of the messages or completion. None\", 'type': 'BadRequestError', 'param': None, 'code': 400}", 19591),
    # https://github.com/lmstudio-ai/lmstudio-bug-tracker/issues/546
    ("lm-studio", "Trying to keep the first 111490 tokens when context the overflows. However, the model is loaded "
     "with context length of only 32768 tokens, which is not enough. Try to load the model with a larger context "
     "length, or provide a shorter input.", 111490),
    # https://github.com/bytedance/UI-TARS-desktop/issues/626
    ("tgi", "422 \"Input validation error: `inputs` tokens + `max_new_tokens` must be <= 65537. Given: 79993 `inputs` "
     "tokens and 1024 `max_new_tokens`\"", 79993),
]

NOT_OVERFLOW = [
    # https://github.com/MoonshotAI/Kimi-K2/issues/5 (quota, with "exceeded" in it)
    ("quota", "Error code: 403 - {'error': {'message': 'Your account org-x is not active, organization <org-x> "
     "exceeded current quota, please check your plan and billing details', 'type': 'exceeded_current_quota_error'}}"),
    ("openai-tpm", "Request too large for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, "
     "Requested 41000. The input or output tokens must be reduced in order to run successfully."),
    ("openai-rate", "Rate limit reached for gpt-4o in organization org-x on requests per min (RPM): Limit 500"),
    ("anthropic-rate", "Error code: 429 - {'type': 'error', 'error': {'type': 'rate_limit_error', 'message': "
     "'Number of request tokens has exceeded your per-minute rate limit'}}"),
    ("anthropic-billing", "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing"),
    ("bedrock-throttle", "ThrottlingException: Too many tokens, please wait before trying again."),
    ("gemini-quota", "429 RESOURCE_EXHAUSTED: You exceeded your current quota, please check your plan and billing."),
    ("deepseek-balance", "Error code: 402 - {'error': {'message': 'Insufficient Balance', 'type': 'unknown_error'}}"),
    ("auth", "Error code: 401 - {'error': {'message': 'Incorrect API key provided: sk-abc', 'code': "
     "'invalid_api_key'}}"),
    ("max-tokens-param", "max_tokens is too large: 50000. This model supports at most 16384 completion tokens"),
    ("dashscope-rate", "Requests rate limit exceeded, please try again later."),
    ("zh-rate", "请求过于频繁，触发限流，请稍后再试"),
]


@pytest.mark.parametrize("provider,message,count", PROVIDERS, ids=[p[0] for p in PROVIDERS])
def test_every_providers_overflow_is_recognised_and_its_count_read(provider, message, count):
    assert is_context_overflow_error(message) is True
    assert observed_token_count(message) == count


@pytest.mark.parametrize("kind,message", NOT_OVERFLOW, ids=[n[0] for n in NOT_OVERFLOW])
def test_rate_limits_quotas_billing_and_auth_are_never_overflow(kind, message):
    assert is_context_overflow_error(message) is False


@pytest.mark.parametrize("message", [
    "The conversation history exceeds the model's maximum window of 32k tokens",
    "Your input is longer than the context limit of this deployment",
    "请求的上下文长度超过模型上限",
    "输入长度超过最大限制",
])
def test_an_unseen_wording_is_recognised_by_its_structure(message):
    assert is_context_overflow_error(message) is True


def test_an_sdk_exception_is_recognised_by_its_code_attribute():
    class BadRequest(Exception):
        code = "context_length_exceeded"

    assert is_context_overflow_error(BadRequest("Bad request")) is True
    assert is_context_overflow_error(Exception("Bad request")) is False
