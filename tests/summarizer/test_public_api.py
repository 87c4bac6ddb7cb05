"""The package's public surface is pinned: adding or removing a name must be a deliberate change here too."""
import summarizer

PUBLIC_NAMES = {
    "SummarizerConfig", "parse_chain", "ChainAST", "Section", "Header", "BodyPair", "ChainError", "MessageError",
    "validate_messages", "check_invariants", "summarize_chain", "asummarize_chain", "SummarizeResult",
    "COMPLETION", "REQUEST_RESPONSE", "SUMMARIZATION", "SUMMARIZATION_TOOL", "SUMMARY_PREFIX",
    "SummaryCache", "cap_input", "with_cap_and_cache", "restore_chain", "prepare_provider_switch", "split_turns",
    "extractive_summarize", "make_extractive", "import_chain", "export_chain", "detect_format", "FormatError",
    "count_tokens", "message_tokens", "MissingEncoding", "text_tokens", "tools_tokens", "schema_tokens",
    "FORMATS", "content_text", "message_size", "chain_bytes", "detect_id_template", "extract_identifiers",
    "missing_identifiers", "extract_findings", "is_estimate", "ModelInfo", "lookup_model", "window_from_models_payload",
    "fit_to_window", "FitResult", "compact_now", "overflow_compactor", "ContextTooLarge", "CompactionFailed",
    "OverflowRecoveryFailed", "RetryableProviderError", "SummarizeAborted", "retry_call", "summarize_with_fallback",
    "FitPlan", "plan_fit", "effective_reserve", "is_context_overflow_error", "observed_token_count",
    "call_with_overflow_recovery", "register_compaction_provider", "get_compaction_provider",
    "unregister_compaction_provider", "prune_view", "PruneSettings", "assert_valid_view", "InvalidView",
    "registered_compaction_providers", "window_check", "SettingSpec", "SUMMARIZER_SETTINGS", "parse_bool",
    "MAX_INSTRUCTION_CHARS", "with_ledger", "is_case_insensitive_id", "retention_of", "Retention",
    "SUMMARY_SYSTEM_PROMPT", "COMPACTION_SYSTEM_PROMPT",
    "anthropic_to_messages", "messages_to_anthropic", "anthropic_response_message", "anthropic_response_content",
    "responses_to_messages", "messages_to_responses", "responses_output_messages", "messages_to_responses_output",
    "responses_resumable",
    "request_tokens", "RequestTokens", "observed_context_limit",
    "summarize_chain_for_window", "WindowTarget", "STRATEGIES", "DEFAULT_INPUT_TOKENS",
}


def test_the_public_names_are_exactly_the_pinned_ones():
    assert set(summarizer.__all__) == PUBLIC_NAMES
    assert len(summarizer.__all__) == len(PUBLIC_NAMES)  # no name listed twice


def test_every_public_name_resolves():
    missing = [name for name in summarizer.__all__ if not hasattr(summarizer, name)]
    assert missing == []
