"""How real providers say "your prompt does not fit the context window", and how to read the count they saw.

Collected from the providers' own error texts as users reported them (the table test cites each source):
OpenAI and Azure OpenAI, Anthropic, Gemini / Vertex, Bedrock, Mistral, Groq, DeepSeek, Qwen / DashScope,
Moonshot (Kimi), Zhipu GLM, OpenRouter, LiteLLM, Ollama, llama.cpp's server, llama-cpp-python's server, vLLM,
LM Studio and text-generation-inference. Recognition is three layers, tried in order:
1. error codes and types that only ever mean overflow (`context_length_exceeded`, `exceed_context_size_error`);
2. each provider's sentence as a regular expression, with a named group `n` for the observed prompt size;
3. a structural rule for wordings not seen yet: a prompt-side subject (prompt, input, messages, context ...),
   an excess word (exceeds, too long, greater than, 超过 ...) and a limit word (maximum, limit, window, 上限 ...)
   in the same sentence.
Rate limits, tokens-per-minute limits, quotas, billing and auth share words with these ("request too large",
"exceeded", "limit") but compaction cannot fix them: overflow.py rules them out before any of this runs.
"""
from __future__ import annotations

import re

__all__ = ["OVERFLOW_CODES", "PROVIDER_PATTERNS", "COUNT_PATTERNS", "LIMIT_PATTERNS", "NOT_OVERFLOW_SIGNATURES",
           "matches_structure", "OUTPUT_ONLY"]

_N = r"(?P<n>\d[\d,]*)"  # the observed prompt size (tokens), commas allowed
_D = r"\d[\d,]*"

OVERFLOW_CODES: tuple[str, ...] = (
    "context_length_exceeded",       # OpenAI, Azure OpenAI, Groq (error.code)
    "exceed_context_size_error",     # llama.cpp server (error.type)
    "request_too_large",             # Anthropic 413 (error.type)
    "model_context_window_exceeded",  # z.ai
    "contextwindowexceedederror",    # LiteLLM's exception class name, kept in its messages
)

PROVIDER_PATTERNS: tuple[re.Pattern[str], ...] = tuple(re.compile(p) for p in (
    # OpenAI / Azure / DeepSeek / vLLM / llama-cpp-python / OpenRouter: "maximum context length is M tokens.
    # However, you requested [about] N tokens" or "your messages resulted in N tokens"
    rf"maximum context length is {_D} tokens[.,]?\s*however,? (?:you requested(?: about)?|your messages resulted in)"
    rf" {_N} tokens",
    rf"maximum context length is {_D} tokens",
    rf"prompt is too long:\s*{_N}\s*tokens\s*>\s*{_D}\s*maximum",                          # Anthropic
    r"prompt is too long",                                                                # Anthropic (short form)
    rf"input token count \({_N}\) exceeds the maximum number of tokens",                   # Gemini / Vertex
    r"input token count exceeds the maximum number of input tokens",                      # Vertex (older)
    r"input is too long for (?:the )?(?:requested )?model",                               # Bedrock
    r"too many input tokens",                                                             # Bedrock (Converse)
    rf"prompt contains {_N} tokens.{{0,80}}too large for model with {_D} maximum context length",  # Mistral
    rf"too large for model with {_D} maximum context length",                             # Mistral (short)
    rf"`?inputs`? tokens \+ `?max_new_tokens`? must be <= {_D}\.\s*given: {_N} `?inputs`? tokens",  # TGI
    rf"`?inputs`? must have less than {_D} tokens\.\s*given: {_N}",                       # TGI (no max_new_tokens)
    rf"range of input length should be \[{_D},\s*{_D}\]",                                 # Qwen / DashScope
    rf"exceeded model token limit(?::\s*{_D})?(?:\s*\(requested:\s*{_N}\))?",              # Moonshot / Kimi
    r"prompt exceeds max length",                                                         # Zhipu GLM (code 1261)
    r"exceeds the available context size",                                                # llama.cpp server
    rf"requested tokens \({_N}\) exceed context window of {_D}",                          # llama-cpp-python
    rf"trying to keep the first {_N} tokens when context the overflows",                  # LM Studio
    rf"cannot truncate prompt with n_keep \({_N}\) >= n_ctx",                             # LM Studio / llama.cpp
    r"input length exceeds the context length",                                           # Ollama
    r"prompt too long; exceeded (?:max )?context length",                                 # Ollama
    r"context length exceeded",                                                           # Ollama (old client)
    rf"input tokens exceed the configured limit of {_D}",                                 # LiteLLM
    rf"request \({_N} tokens\) exceeds",                                                  # llama.cpp (older)
    rf"input length and `?max_tokens`? exceed context limit:\s*{_N}",                     # Anthropic (older)
    r"(?:上下文|输入|提示词?|prompt|token|令牌).{0,12}(?:过长|超长|超出|超过|超限)",               # Chinese gateways
    r"超出最大上下文|超过模型上限|超过最大长度|超出最大长度",
))

# Counts some providers report in a separate field or clause of the same message.
COUNT_PATTERNS: tuple[re.Pattern[str], ...] = tuple(re.compile(p) for p in (
    rf'"?n_prompt_tokens"?\s*[:=]\s*{_N}',                      # llama.cpp server JSON body
    rf"{_N}\s*tokens\s*>\s*{_D}\s*maximum",
    rf"resulted in\s+{_N}\s+tokens",
    rf"requested(?: about)?\s+{_N}\s+tokens",
))

# The window the provider enforced, where its message names it (named group `m`): a window learned from the
# provider beats a guessed one.
_M = r"(?P<m>\d[\d,]*)"
LIMIT_PATTERNS: tuple[re.Pattern[str], ...] = tuple(re.compile(p) for p in (
    rf"prompt is too long:\s*{_D}\s*tokens\s*>\s*{_M}\s*maximum",                           # Anthropic
    rf"exceed context limit:\s*{_D}\s*\+\s*{_D}\s*>\s*{_M}",                               # Anthropic (older)
    rf"maximum context length is {_M} tokens",                                           # OpenAI and friends
    rf"exceeds the maximum number of tokens allowed \({_M}\)",                            # Gemini / Vertex
    rf"too large for model with {_M} maximum context length",                            # Mistral
    rf"max_new_tokens`? must be <= {_M}",                                                # TGI
    rf"exceeded model token limit:\s*{_M}",                                              # Moonshot / Kimi
    rf"exceed context window of {_M}",                                                   # llama-cpp-python
    rf'"?n_ctx"?\s*[:=]\s*{_M}',                                                          # llama.cpp server
    rf"configured limit of {_M}",                                                        # LiteLLM
    rf"context length of only {_M} tokens",                                              # LM Studio
))

NOT_OVERFLOW_SIGNATURES: tuple[str, ...] = (
    "rate limit", "rate_limit", "ratelimit", "too many requests", "tokens per min", "tokens per day",
    "requests per min", "quota", "billing", "insufficient_quota", "credit balance", "insufficient balance",
    "throttl", "please wait", "余额不足", "欠费", "限流", "频率", "每分钟", "invalid api key", "invalid_api_key",
    "incorrect api key", "unauthorized", "authentication", "permission denied", "access denied",
)

# The only excess the message names is the requested output (max_tokens too high): a parameter error that
# compaction cannot fix, e.g. "max_tokens is too large: 50000" or "max_tokens exceeds the limit of 8192"; a
# Responses answer cut short by its own `max_output_tokens` is not an overflow either.
OUTPUT_ONLY = re.compile(r"max_(?:completion_|new_|output_)?tokens")
_INPUT_SIDE = re.compile(r"prompt|input|messages?\b|context|conversation|上下文|输入")

_SUBJECT = r"(?:prompt|input|request|messages?|context|conversation|history)"
_EXCESS = (r"(?:exceed(?:s|ed|ing)?|too long|too large|too big|longer than|greater than|more than|over the limit"
           r"|overflow)")
_LIMIT = re.compile(r"maximum|\bmax\b|limit|context (?:length|window|size)|allowed|\bwindow\b")
_STRUCTURE = re.compile(rf"\b{_SUBJECT}\b[^.;\n]{{0,80}}?\b{_EXCESS}\b|\b{_EXCESS}\b[^.;\n]{{0,40}}?\bcontext\b")


def matches_structure(low: str) -> bool:
    """A prompt-side subject and an excess word in one sentence, with a limit word in the message."""
    if OUTPUT_ONLY.search(low) and not _INPUT_SIDE.search(OUTPUT_ONLY.sub("", low)):
        return False
    return bool(_STRUCTURE.search(low)) and bool(_LIMIT.search(low))
