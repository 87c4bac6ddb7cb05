"""Pure chain summarization and context management for PentAGI-style agents (no web, no HTTP).

The LLM comes in as a callable: `summarize(prompt: str) -> str` (or an async one).
"""
from __future__ import annotations

from .chain import (
    COMPLETION, REQUEST_RESPONSE, SUMMARIZATION, SUMMARIZATION_TOOL, SUMMARY_PREFIX, BodyPair, ChainAST, ChainError,
    Header, Section, check_invariants, parse_chain,
)
from .config import SummarizerConfig
from .handler import SummaryCache, cap_input, with_cap_and_cache
from .messages import MessageError, validate_messages
from .restore import prepare_provider_switch, restore_chain
from .summarize import SummarizeResult, asummarize_chain, summarize_chain
from .tokens import MissingEncoding, count_tokens, message_tokens

__all__ = [
    # engine (chain AST, PentAGI passes)
    "SummarizerConfig", "parse_chain", "ChainAST", "Section", "Header", "BodyPair", "ChainError", "MessageError",
    "validate_messages", "check_invariants", "summarize_chain", "asummarize_chain", "SummarizeResult",
    "COMPLETION", "REQUEST_RESPONSE", "SUMMARIZATION", "SUMMARIZATION_TOOL", "SUMMARY_PREFIX",
    "SummaryCache", "cap_input", "with_cap_and_cache", "restore_chain", "prepare_provider_switch",
    # tokens (TOOLS helper)
    "count_tokens", "message_tokens", "MissingEncoding",
]
