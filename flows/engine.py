"""The one door from the Django app into the pure engine (`summarizer`).

Every module of `flows/` that needs the engine imports it from here, and this module imports only names of
`summarizer.__all__`, the engine's pinned public surface (tests/test_architecture.py enforces both). So the
engine's internals can move freely, and what the app relies on is listed in one place.
"""
from __future__ import annotations

from summarizer import (
    COMPACTION_SYSTEM_PROMPT,
    DEFAULT_INPUT_TOKENS,
    FORMATS,
    MAX_INSTRUCTION_CHARS,
    STRATEGIES,
    SUMMARIZER_SETTINGS,
    SUMMARY_SYSTEM_PROMPT,
    ChainError,
    ContextTooLarge,
    FormatError,
    MessageError,
    ModelInfo,
    RequestTokens,
    RetryableProviderError,
    SettingSpec,
    SummarizerConfig,
    SummaryCache,
    WindowTarget,
    anthropic_response_content,
    anthropic_response_message,
    anthropic_to_messages,
    cap_input,
    chain_bytes,
    compact_now,
    content_text,
    count_tokens,
    detect_id_template,
    effective_reserve,
    export_chain,
    extract_findings,
    extract_identifiers,
    fit_to_window,
    import_chain,
    is_case_insensitive_id,
    is_context_overflow_error,
    is_estimate,
    lookup_model,
    make_extractive,
    message_size,
    message_tokens,
    messages_to_anthropic,
    messages_to_responses,
    messages_to_responses_output,
    missing_identifiers,
    observed_context_limit,
    observed_token_count,
    parse_bool,
    parse_chain,
    prune_view,
    register_compaction_provider,
    registered_compaction_providers,
    request_tokens,
    responses_output_messages,
    responses_resumable,
    responses_to_messages,
    retention_of,
    schema_tokens,
    split_turns,
    summarize_chain,
    summarize_chain_for_window,
    text_tokens,
    tools_tokens,
    validate_messages,
    window_check,
    window_from_models_payload,
    with_ledger,
)

__all__ = [
    # messages: validation, text, PentAGI byte sizes, tool-call id templates
    "MessageError", "validate_messages", "content_text", "message_size", "chain_bytes", "detect_id_template",
    # the chain AST (sections of a stored view)
    "ChainError", "parse_chain",
    # summarization (PentAGI) and window fit / compaction (OpenClaw-style)
    "SummarizerConfig", "summarize_chain", "fit_to_window", "compact_now", "ContextTooLarge", "effective_reserve",
    # the window-aware strategy (the passes only when the view would not fit the window's margin)
    "summarize_chain_for_window", "WindowTarget", "STRATEGIES", "DEFAULT_INPUT_TOKENS", "split_turns",
    "MAX_INSTRUCTION_CHARS",
    # summarize callables: the offline summarizer, caching and input caps
    "make_extractive", "SummaryCache", "cap_input", "with_ledger",
    # what a compaction kept of the replaced messages' findings and identifiers (the events' retention score)
    "retention_of",
    # provider errors the engine understands
    "RetryableProviderError", "is_context_overflow_error", "observed_token_count", "observed_context_limit",
    # per-request pruning of old tool results (the gateway)
    "prune_view",
    # tokens and the model catalog
    "count_tokens", "message_tokens", "is_estimate", "ModelInfo", "lookup_model", "window_from_models_payload",
    "text_tokens", "tools_tokens", "schema_tokens",
    # identifiers (memory notes, preview retention)
    "extract_identifiers", "missing_identifiers", "extract_findings", "is_case_insensitive_id",
    # transcript formats
    "FORMATS", "FormatError", "import_chain", "export_chain",
    # the wire formats the gateway speaks besides Chat Completions (Anthropic Messages, OpenAI Responses)
    "anthropic_to_messages", "messages_to_anthropic", "anthropic_response_message", "anthropic_response_content",
    "responses_to_messages", "messages_to_responses", "responses_output_messages", "messages_to_responses_output",
    "responses_resumable",
    "request_tokens", "RequestTokens",
    # settings: one declaration per engine setting, PentAGI's boolean parser, the window check
    "SUMMARIZER_SETTINGS", "SettingSpec", "parse_bool", "window_check",
    # compaction provider plugins
    "register_compaction_provider", "registered_compaction_providers",
    # the system prompts sent with every summary request (the engine's CLI sends the same summary prompt)
    "SUMMARY_SYSTEM_PROMPT", "COMPACTION_SYSTEM_PROMPT",
]
