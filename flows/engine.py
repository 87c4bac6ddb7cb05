"""The one door from the Django app into the pure engine (`summarizer`).

Every module of `flows/` that needs the engine imports it from here, and this module imports only names of
`summarizer.__all__`, the engine's pinned public surface (tests/test_architecture.py enforces both). So the
engine's internals can move freely, and what the app relies on is listed in one place.
"""
from __future__ import annotations

from summarizer import (
    FORMATS,
    ChainError,
    ContextTooLarge,
    FormatError,
    MessageError,
    ModelInfo,
    RetryableProviderError,
    SummarizerConfig,
    SummaryCache,
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
    is_context_overflow_error,
    is_estimate,
    lookup_model,
    make_extractive,
    message_size,
    message_tokens,
    missing_identifiers,
    observed_token_count,
    parse_chain,
    prune_view,
    summarize_chain,
    validate_messages,
    window_from_models_payload,
)

__all__ = [
    # messages: validation, text, PentAGI byte sizes, tool-call id templates
    "MessageError", "validate_messages", "content_text", "message_size", "chain_bytes", "detect_id_template",
    # the chain AST (sections of a stored view)
    "ChainError", "parse_chain",
    # summarization (PentAGI) and window fit / compaction (OpenClaw-style)
    "SummarizerConfig", "summarize_chain", "fit_to_window", "compact_now", "ContextTooLarge", "effective_reserve",
    # summarize callables: the offline summarizer, caching and input caps
    "make_extractive", "SummaryCache", "cap_input",
    # provider errors the engine understands
    "RetryableProviderError", "is_context_overflow_error", "observed_token_count",
    # per-request pruning of old tool results (the gateway)
    "prune_view",
    # tokens and the model catalog
    "count_tokens", "message_tokens", "is_estimate", "ModelInfo", "lookup_model", "window_from_models_payload",
    # identifiers (memory notes, preview retention)
    "extract_identifiers", "missing_identifiers", "extract_findings",
    # transcript formats
    "FORMATS", "FormatError", "import_chain", "export_chain",
]
