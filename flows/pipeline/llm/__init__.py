"""Summarize and chat callables over the configured model endpoint (or the offline extractive summarizer).

Public surface: `summarize_callable_for`, `chat_callable_for`, `provider_from_env`, the error types, and
`clear_summary_caches`. Module map: errors (what can fail), client (one completion with retries),
prompts (system prompts), recording (LLMCall rows), callables (choosing the backend, caching, fallbacks).
"""
from flows.config import provider_from_env
from flows.engine import COMPACTION_SYSTEM_PROMPT, SUMMARY_SYSTEM_PROMPT
from flows.pipeline.llm.callables import (
    PURPOSES,
    Plan,
    Target,
    chat_callable_for,
    clear_summary_caches,
    is_offline,
    offline_summarizer,
    plan_for,
    summarize_callable_for,
)
from flows.pipeline.llm.client import Completion, complete
from flows.pipeline.llm.errors import (
    ContextOverflowError,
    LLMError,
    ProviderError,
    RetryableProviderError,
    SummaryFailed,
)
from flows.pipeline.llm.recording import calls_held

__all__ = [
    "summarize_callable_for", "chat_callable_for", "provider_from_env", "plan_for", "Plan", "Target", "PURPOSES",
    "clear_summary_caches", "offline_summarizer", "is_offline", "complete", "Completion", "LLMError", "ProviderError",
    "RetryableProviderError", "ContextOverflowError", "SummaryFailed", "SUMMARY_SYSTEM_PROMPT",
    "COMPACTION_SYSTEM_PROMPT", "calls_held",
]
