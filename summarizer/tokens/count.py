"""Token counts for OpenAI-format chat messages (tiktoken, offline).

A message costs its text tokens plus the chat-format overhead OpenAI documents in its cookbook (3 tokens per
message, 1 more for a `name`), its tool calls (name + arguments) and tool_call_id; a request adds 3 tokens of
reply priming and its tool schemas as the provider renders them (`function_schemas`).
Counts for non-OpenAI models use the same encodings and are estimates (`is_estimate`).

Messages are immutable once stored, so counts are cached per message, keyed by (encoding, hash of the message's
canonical JSON): counting a view again after an append only encodes the new messages.
"""
from __future__ import annotations

import functools
import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any

from summarizer.tokens.encodings import MissingEncoding, ensure_offline_encodings
from summarizer.tokens.function_schemas import FUNCTIONS_FRAMING_TOKENS, render_functions, split_tools

__all__ = [
    "count_tokens", "message_tokens", "text_tokens", "tools_tokens", "schema_tokens", "encoding_name_for",
    "is_estimate", "get_encoding",
    "TokenCounter", "TokenCache", "MissingEncoding", "normalize_model_name",
    "TOKENS_PER_MESSAGE", "TOKENS_PER_NAME", "REPLY_PRIMING_TOKENS", "IMAGE_TOKENS_HIGH", "IMAGE_TOKENS_LOW",
]

TOKENS_PER_MESSAGE = 3        # <|start|>{role/name}\n{content}<|end|>\n
TOKENS_PER_NAME = 1
TOKENS_PER_TOOL_CALL = 3      # call framing around name + arguments (approximation; OpenAI does not publish it)
REPLY_PRIMING_TOKENS = 3      # every reply is primed with <|start|>assistant<|message|>
TOOLS_FRAMING_TOKENS = 12     # system-side wrapper around the tool schemas (approximation)
IMAGE_TOKENS_HIGH = 765       # a 1024x1024 image at detail=high/auto on gpt-4o (85 base + 4 tiles x 170)
IMAGE_TOKENS_LOW = 85
MAX_CACHED_MESSAGES = 50_000

O200K_PREFIXES = ("gpt-4o", "chatgpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "gpt-oss", "o1", "o3", "o4")
OPENAI_PREFIXES = O200K_PREFIXES + ("gpt-3.5", "gpt-4", "chatgpt", "text-embedding", "davinci", "babbage", "codex")


def normalize_model_name(model: str | None) -> str:
    """Lower-case model id without provider prefix ("openrouter/openai/gpt-4o" -> "gpt-4o")."""
    return (model or "").strip().lower().rsplit("/", 1)[-1]


def _has_prefix(name: str, prefixes: tuple[str, ...]) -> bool:
    # "o1" covers "o1" and "o1-mini" but not a hypothetical "o10": the next character must not be a digit
    return any(name.startswith(p) and not name[len(p):len(p) + 1].isdigit() for p in prefixes)


@functools.lru_cache(maxsize=256)  # asked for every message counted (a run counts its view three times); few models
def encoding_name_for(model: str | None) -> str:
    """o200k_base for the gpt-4o / 4.1 / 4.5 / o-series / gpt-5 families, cl100k_base otherwise."""
    return "o200k_base" if _has_prefix(normalize_model_name(model), O200K_PREFIXES) else "cl100k_base"


def is_estimate(model: str | None) -> bool:
    """True unless the model is an OpenAI model, whose tokenizer tiktoken reproduces exactly."""
    name = normalize_model_name(model)
    return not (name and _has_prefix(name, OPENAI_PREFIXES))


@functools.lru_cache(maxsize=4)
def get_encoding(name: str) -> Any:
    """The tiktoken encoding `name`, loaded from the offline cache; MissingEncoding when it cannot be."""
    ensure_offline_encodings()
    import tiktoken  # deferred: importing tiktoken is slow and only needed when counting

    try:
        return tiktoken.get_encoding(name)
    except Exception as exc:  # tiktoken falls back to a download, which fails offline with a network error
        raise MissingEncoding(f"tiktoken encoding {name!r} could not be loaded offline: {exc}") from exc


class TokenCache:
    """A thread-safe LRU of per-message token counts with hit/miss counters."""

    def __init__(self, max_entries: int = MAX_CACHED_MESSAGES) -> None:
        self.max_entries = max_entries
        self.hits = 0
        self.misses = 0
        self._data: OrderedDict[tuple[str, bytes], int] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[str, bytes]) -> int | None:
        with self._lock:
            value = self._data.get(key)
            if value is None:
                self.misses += 1
                return None
            self.hits += 1
            self._data.move_to_end(key)
            return value

    def put(self, key: tuple[str, bytes], value: int) -> None:
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.max_entries:
                self._data.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._data)


DEFAULT_CACHE = TokenCache()


def _message_key(encoding: str, message: Mapping[str, Any]) -> tuple[str, bytes]:
    canonical = json.dumps(message, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return encoding, hashlib.blake2b(canonical.encode("utf-8"), digest_size=16).digest()


def _encode_len(encoding: Any, text: str) -> int:
    # disallowed_special=() : agent text may contain "<|endoftext|>" literally; count it as plain text
    return len(encoding.encode(text, disallowed_special=())) if text else 0


def _content_tokens(encoding: Any, content: Any) -> int:
    if content is None:
        return 0
    if isinstance(content, str):
        return _encode_len(encoding, content)
    total = 0
    for part in content if isinstance(content, list) else [content]:
        if not isinstance(part, Mapping):
            total += _encode_len(encoding, str(part))
        elif part.get("type") == "image_url":
            detail = (part.get("image_url") or {}).get("detail") if isinstance(part.get("image_url"), Mapping) else None
            total += IMAGE_TOKENS_LOW if detail == "low" else IMAGE_TOKENS_HIGH
        else:
            total += _encode_len(encoding, str(part.get("text") or ""))
    return total


def _tool_call_tokens(encoding: Any, tool_calls: Iterable[Any]) -> int:
    total = 0
    for call in tool_calls or []:
        function = (call or {}).get("function") or {}
        arguments = function.get("arguments") or ""
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False)
        total += TOKENS_PER_TOOL_CALL + _encode_len(encoding, str(function.get("name") or ""))
        total += _encode_len(encoding, arguments)
    return total


def _uncached_message_tokens(encoding: Any, message: Mapping[str, Any]) -> int:
    total = TOKENS_PER_MESSAGE + _encode_len(encoding, str(message.get("role") or ""))
    total += _content_tokens(encoding, message.get("content"))
    if message.get("name"):
        total += TOKENS_PER_NAME + _encode_len(encoding, str(message["name"]))
    total += _tool_call_tokens(encoding, message.get("tool_calls") or [])
    if message.get("tool_call_id"):
        total += _encode_len(encoding, str(message["tool_call_id"]))
    return total


def message_tokens(message: Mapping[str, Any], *, model: str | None = None, cache: TokenCache | None = None) -> int:
    """Tokens one chat message costs in a request (text + format overhead + tool calls), cached."""
    cache = DEFAULT_CACHE if cache is None else cache
    name = encoding_name_for(model)
    key = _message_key(name, message)
    cached = cache.get(key)
    if cached is not None:
        return cached
    value = _uncached_message_tokens(get_encoding(name), message)
    cache.put(key, value)
    return value


def text_tokens(text: str, *, model: str | None = None) -> int:
    """Tokens of a bare string (no message overhead)."""
    return _encode_len(get_encoding(encoding_name_for(model)), text)


def tools_tokens(tools: list[Any] | None, *, model: str | None = None) -> int:
    """Tokens the tool schemas add to a request: function schemas as the provider renders them for the model
    (summarizer.tokens.function_schemas), any other tool as its JSON, each part with its framing."""
    if not tools:
        return 0
    functions, others = split_tools(tools)
    total = FUNCTIONS_FRAMING_TOKENS + text_tokens(render_functions(functions), model=model) if functions else 0
    if others:
        total += TOOLS_FRAMING_TOKENS + text_tokens(json.dumps(others, ensure_ascii=False, sort_keys=True),
                                                    model=model)
    return total


def schema_tokens(schema: Any, *, model: str | None = None) -> int:
    """Tokens a structured-output schema (`response_format`, `text.format`) adds: its JSON, framed like tools
    (providers put it in the system prompt; none publishes the exact rendering, so this errs high)."""
    if not schema:
        return 0
    return TOOLS_FRAMING_TOKENS + text_tokens(json.dumps(schema, ensure_ascii=False, sort_keys=True), model=model)


def count_tokens(messages: Iterable[Mapping[str, Any]], *, model: str | None = None,
                 tools: list[Any] | None = None, cache: TokenCache | None = None) -> int:
    """Prompt tokens of a request: every message, the reply priming, and the tool schemas if given."""
    total = sum(message_tokens(m, model=model, cache=cache) for m in messages)
    return total + REPLY_PRIMING_TOKENS + tools_tokens(tools, model=model)


class TokenCounter:
    """Counting bound to one model and one cache (e.g. per chain view being fitted)."""

    def __init__(self, model: str | None = None, cache: TokenCache | None = None) -> None:
        self.model = model
        self.cache = TokenCache() if cache is None else cache
        self.encoding_name = encoding_name_for(model)
        self.estimate = is_estimate(model)

    def message(self, message: Mapping[str, Any]) -> int:
        return message_tokens(message, model=self.model, cache=self.cache)

    def count(self, messages: Iterable[Mapping[str, Any]], *, tools: list[Any] | None = None) -> int:
        return count_tokens(messages, model=self.model, tools=tools, cache=self.cache)

    def text(self, text: str) -> int:
        return text_tokens(text, model=self.model)
