"""Pure chain summarization and context management for PentAGI-style agents (no web, no HTTP).

The LLM comes in as a callable: `summarize(prompt: str) -> str` (or an async one).

This module is the only public door (its names are pinned by tests/summarizer/test_public_api.py); behind it
each folder's `__init__` says what the folder owns:
    chain/        canonical messages and PentAGI's chain AST: validate, size, parse, repair, edit
    passes/       PentAGI's summarization passes A, B and C, their prompts and shapes, the entry points
    strategy/     the window-aware strategy: the passes only when the model's window needs them
    settings/     the setting declarations and SummarizerConfig with PentAGI's profiles
    compact/      fitting a view into the model's window: plan, window cut, truncation, pruning, checkpoints
    recovery/     a failed provider call: context overflow recognised and recovered from, retry and fallback
    extractive/   the offline summarizer and the ledger appended to a model's summary
    formats/      transcript import and export (OpenAI messages, PentAGI msgchain, OpenClaw JSONL) and the
                  wire formats (Anthropic Messages, OpenAI Responses) with their request token counts
    tokens/       token counts (tiktoken, offline) and the model catalog
    identifiers.py  opaque identifiers and security findings in free text; cli.py  `python -m summarizer`
An underscore name is private to its folder, and the folders import each other one way only
(tests/summarizer/test_package_layout.py).
"""
from __future__ import annotations

from summarizer.chain.messages import MessageError, chain_bytes, content_text, message_size, validate_messages
from summarizer.chain.parse import (
    COMPLETION,
    REQUEST_RESPONSE,
    SUMMARIZATION,
    SUMMARIZATION_TOOL,
    SUMMARY_PREFIX,
    BodyPair,
    ChainAST,
    ChainError,
    Header,
    Section,
    check_invariants,
    parse_chain,
)
from summarizer.chain.toolcall_ids import detect_id_template
from summarizer.chain.turns import split_turns
from summarizer.compact.errors import (
    CompactionFailed,
    ContextTooLarge,
    OverflowRecoveryFailed,
    RetryableProviderError,
    SummarizeAborted,
)
from summarizer.compact.fit import FitResult, compact_now, fit_to_window, overflow_compactor
from summarizer.compact.plan import FitPlan, effective_reserve, plan_fit
from summarizer.compact.prompt import MAX_INSTRUCTION_CHARS
from summarizer.compact.providers import (
    get_compaction_provider,
    register_compaction_provider,
    registered_compaction_providers,
    unregister_compaction_provider,
)
from summarizer.compact.prune import PruneSettings, prune_view
from summarizer.compact.validate_view import InvalidView, assert_valid_view
from summarizer.extractive.briefing import extractive_summarize, make_extractive
from summarizer.extractive.ledger import with_ledger
from summarizer.extractive.retention import Retention, retention_of
from summarizer.formats.anthropic import (
    anthropic_response_content,
    anthropic_response_message,
    anthropic_to_messages,
    messages_to_anthropic,
)
from summarizer.formats.convert import FORMATS, FormatError, detect_format, export_chain, import_chain
from summarizer.formats.request_tokens import RequestTokens, request_tokens
from summarizer.formats.responses import (
    messages_to_responses,
    messages_to_responses_output,
    responses_output_messages,
    responses_resumable,
    responses_to_messages,
)
from summarizer.identifiers import extract_findings, extract_identifiers, is_case_insensitive_id, missing_identifiers
from summarizer.passes.handler import SummaryCache, cap_input, with_cap_and_cache
from summarizer.passes.prompts import COMPACTION_SYSTEM_PROMPT, SUMMARY_SYSTEM_PROMPT
from summarizer.passes.restore import prepare_provider_switch, restore_chain
from summarizer.passes.summarize import SummarizeResult, asummarize_chain, summarize_chain
from summarizer.recovery.fallback import retry_call, summarize_with_fallback
from summarizer.recovery.overflow import (
    call_with_overflow_recovery,
    is_context_overflow_error,
    observed_context_limit,
    observed_token_count,
)
from summarizer.settings.config import SummarizerConfig
from summarizer.settings.spec import SUMMARIZER_SETTINGS, SettingSpec, parse_bool
from summarizer.strategy.window import DEFAULT_INPUT_TOKENS, STRATEGIES, WindowTarget, summarize_chain_for_window
from summarizer.tokens.catalog import ModelInfo, lookup_model, window_check, window_from_models_payload
from summarizer.tokens.count import (
    MissingEncoding,
    count_tokens,
    is_estimate,
    message_tokens,
    schema_tokens,
    text_tokens,
    tools_tokens,
)

__all__ = [
    # engine (chain AST, PentAGI passes)
    "SummarizerConfig", "parse_chain", "ChainAST", "Section", "Header", "BodyPair", "ChainError", "MessageError",
    "validate_messages", "check_invariants", "summarize_chain", "asummarize_chain", "SummarizeResult",
    "COMPLETION", "REQUEST_RESPONSE", "SUMMARIZATION", "SUMMARIZATION_TOOL", "SUMMARY_PREFIX",
    "SummaryCache", "cap_input", "with_cap_and_cache", "restore_chain", "prepare_provider_switch", "split_turns",
    # the window-aware strategy: PentAGI's passes only when the view would not fit the window's margin
    "summarize_chain_for_window", "WindowTarget", "STRATEGIES", "DEFAULT_INPUT_TOKENS",
    # the offline summarizer and the transcript formats
    "extractive_summarize", "make_extractive", "import_chain", "export_chain", "detect_format", "FormatError",
    "FORMATS",
    # the wire formats: requests and answers <-> our messages, losslessly, and a request's token breakdown
    "anthropic_to_messages", "messages_to_anthropic", "anthropic_response_message", "anthropic_response_content",
    "responses_to_messages", "messages_to_responses", "responses_output_messages", "messages_to_responses_output",
    "responses_resumable",
    "request_tokens", "RequestTokens",
    # message sizes and text, tool-call ids, identifiers (what the app stores and shows)
    "content_text", "message_size", "chain_bytes", "detect_id_template", "extract_identifiers",
    "missing_identifiers", "extract_findings",
    # tokens and the model catalog
    "count_tokens", "message_tokens", "MissingEncoding", "is_estimate", "ModelInfo", "lookup_model",
    "window_from_models_payload", "text_tokens", "tools_tokens", "schema_tokens",
    # window fit and compaction
    "fit_to_window", "FitResult", "compact_now", "overflow_compactor", "ContextTooLarge", "CompactionFailed",
    "OverflowRecoveryFailed", "RetryableProviderError", "SummarizeAborted", "retry_call", "summarize_with_fallback",
    "FitPlan", "plan_fit", "effective_reserve", "is_context_overflow_error", "observed_token_count",
    "observed_context_limit",
    "call_with_overflow_recovery", "register_compaction_provider", "get_compaction_provider",
    "unregister_compaction_provider", "prune_view", "PruneSettings", "assert_valid_view", "InvalidView",
    "registered_compaction_providers", "window_check", "MAX_INSTRUCTION_CHARS",
    # the deterministic ledger of audited findings appended to every model-written summary
    "with_ledger", "is_case_insensitive_id",
    # the retention score of a compaction: the replaced messages' findings and identifiers the view still holds
    "retention_of", "Retention",
    # settings: one declaration per setting, one boolean parser (Go's strconv.ParseBool set)
    "SettingSpec", "SUMMARIZER_SETTINGS", "parse_bool",
    # the system prompts every summary request is sent with (one text per purpose, for the app and the CLI)
    "SUMMARY_SYSTEM_PROMPT", "COMPACTION_SYSTEM_PROMPT",
]
