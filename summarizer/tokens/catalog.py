"""Model context windows: the built-in catalog and what an OpenAI-compatible endpoint reports.

Precedence (compaction.md §1) is decided by the caller: an admin override, then the endpoint's GET /v1/models
(`window_from_models_payload`), then this catalog (`lookup_model`). An unknown window stays None: the window step
is then skipped, as the product documents say for Ollama and unlisted endpoints.
"""
from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from importlib.resources import files
from typing import Any

__all__ = [
    "ModelInfo", "lookup_model", "window_from_models_payload", "listed_id_matches", "window_check", "catalog_models",
    "MIN_AGENT_WINDOW_TOKENS", "WARN_WINDOW_TOKENS", "WINDOW_UNKNOWN_MESSAGE",
]

MIN_AGENT_WINDOW_TOKENS = 16_000
WARN_WINDOW_TOKENS = 32_000
WINDOW_UNKNOWN_MESSAGE = "window unknown: lower the summarizer byte limits for small models"


@dataclass(frozen=True)
class ModelInfo:
    context_window: int
    max_output_tokens: int | None
    model: str = ""
    provider: str = ""
    source: str = "catalog"   # "catalog" | "endpoint"


@functools.lru_cache(maxsize=1)
def _catalog() -> dict[str, ModelInfo]:
    """Catalog keys and aliases -> ModelInfo (the canonical key in `.model`)."""
    raw = json.loads(files("summarizer.tokens").joinpath("data/models.json").read_text(encoding="utf-8"))
    index: dict[str, ModelInfo] = {}
    for key, entry in raw["models"].items():
        info = ModelInfo(int(entry["context_window"]), int(entry["max_output_tokens"]), key, entry["provider"])
        for name in [key, *entry.get("aliases", [])]:
            index[name] = info
    return index


def catalog_models() -> list[ModelInfo]:
    """Every catalog model once, in file order (for the settings page)."""
    return list({info.model: info for info in _catalog().values()}.values())


# OpenRouter variants, Bedrock versions and Vertex "@date" carry no window information.
_VARIANT_RE = re.compile(r"(?::(?:free|beta|extended|nitro|floor|thinking|online)|-v\d+(?::\d+)?|@[\w.-]+)$")
_VENDOR_DOT_RE = re.compile(r"^(?:[a-z]{2}\.)?(?:anthropic|meta|mistral|amazon|cohere|deepseek|qwen|openai)\.")
_SUFFIX_RES = [
    re.compile(r"-(?:\d{4}-\d{2}-\d{2}|\d{8}|\d{4}|\d{3}|\d{2}-\d{2})$"),          # release dates and revisions
    re.compile(r"-(?:latest|preview|exp|experimental)$"),
    re.compile(r"-(?:instruct|it|chat-hf|hf|turbo|instant|versatile|fp8|awq|gguf|gptq|bf16)$"),
]


def _base_name(model: str) -> str | None:
    name = model.strip().lower().rsplit("/", 1)[-1]
    name = _VENDOR_DOT_RE.sub("", _VARIANT_RE.sub("", name))
    name = re.sub(r"^meta-(?=llama)", "", name)
    name = re.sub(r"^qwen-(?=\d)", "qwen", name)              # OpenRouter "qwen-2.5-72b" = "qwen2.5-72b"
    if not name or ":" in name:
        return None  # an Ollama-style tag ("llama3.1:8b") runs with a server-chosen window: unknown
    return name


def _candidates(name: str) -> Iterator[str]:
    """`name`, then `name` with one more suffix stripped each step; Claude's dotted versions get dashes."""
    seen = set()
    while name and name not in seen:
        seen.add(name)
        yield name
        if name.startswith("claude"):
            yield re.sub(r"(?<=\d)\.(?=\d)", "-", name)
        for suffix in _SUFFIX_RES:
            stripped = suffix.sub("", name)
            if stripped != name:
                name = stripped
                break


def lookup_model(model: str | None) -> ModelInfo | None:
    """The catalog entry for a model id as providers spell it ("openrouter/anthropic/claude-3.5-sonnet",
    "gpt-4o-2024-08-06", "meta-llama/Llama-3.1-8B-Instruct"), or None when unknown."""
    name = _base_name(model or "")
    if not name:
        return None
    index = _catalog()
    candidates = list(_candidates(name))
    for candidate in candidates:
        if candidate in index:
            return index[candidate]
    # A longer id built on a known one ("gpt-4o-audio-preview", "mistral-small-3.1-24b"): the longest known
    # prefix that ends at a dash boundary.
    best = max((key for key in index for c in candidates if c.startswith(key + "-")), key=len, default=None)
    return index[best] if best else None


def _positive_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    return value if isinstance(value, int) and value > 0 else None


def _entries(payload: Any) -> list[Mapping[str, Any]]:
    if isinstance(payload, Mapping):
        for key in ("data", "models"):
            if isinstance(payload.get(key), list):
                payload = payload[key]
                break
        else:
            payload = [payload]
    return [e for e in payload if isinstance(e, Mapping)] if isinstance(payload, list) else []


def _entry_id(entry: Mapping[str, Any]) -> str:
    return str(entry.get("id") or entry.get("name") or entry.get("model") or "")


def listed_id_matches(listed: str, model_id: str) -> bool:
    """Whether a GET /v1/models entry id names the model a call asks for: exactly that id, or it under the
    `models/` collection prefix Gemini's OpenAI-compatible listing gives its ids. Nothing looser: case, a vendor
    prefix or a lone listed model can name another model with another window (a llama.cpp server lists its one
    file whatever the client calls it; the window of "gpt-4o-mini" is not that file's)."""
    return bool(model_id) and (listed == model_id or listed == "models/" + model_id)


def _find_entry(entries: list[Mapping[str, Any]], model_id: str) -> Mapping[str, Any] | None:
    return next((entry for entry in entries if listed_id_matches(_entry_id(entry), model_id)), None)


def _window_fields(entry: Mapping[str, Any]) -> list[int]:
    meta: Mapping[str, Any] = entry["meta"] if isinstance(entry.get("meta"), Mapping) else {}
    top: Mapping[str, Any] = entry["top_provider"] if isinstance(entry.get("top_provider"), Mapping) else {}
    values = [entry.get(k) for k in ("context_length", "max_model_len", "context_window", "max_context_length",
                                     "loaded_context_length", "n_ctx")]
    values += [meta.get("n_ctx"), top.get("context_length")]
    found = [v for v in map(_positive_int, values) if v]
    if not found:
        found = [v for v in [_positive_int(meta.get("n_ctx_train"))] if v]
    return found


def window_from_models_payload(payload: Any, model_id: str) -> ModelInfo | None:
    """The window an OpenAI-compatible GET /v1/models response reports for `model_id`, or None when no entry is
    that model (`listed_id_matches`: a listing of other ids says nothing about this one).

    Fields seen in the wild: context_length (OpenRouter, LM Studio), max_model_len (vLLM), context_window,
    meta.n_ctx / meta.n_ctx_train (llama.cpp), top_provider.context_length. When several are present the
    smallest wins: it is the one the server actually enforces (runtime n_ctx below the trained length, a
    provider serving less than the model's maximum).
    """
    entry = _find_entry(_entries(payload), model_id or "")
    if entry is None:
        return None
    windows = _window_fields(entry)
    if not windows:
        return None
    window = min(windows)
    top: Mapping[str, Any] = entry["top_provider"] if isinstance(entry.get("top_provider"), Mapping) else {}
    output = next((v for v in map(_positive_int, [top.get("max_completion_tokens"), entry.get("max_output_tokens"),
                                                  entry.get("max_completion_tokens")]) if v), None)
    if output is None:
        known = lookup_model(model_id)
        output = known.max_output_tokens if known else None
    return ModelInfo(window, min(output, window) if output else None, _entry_id(entry),
                     str(entry.get("owned_by") or ""),
                     "endpoint")


def window_check(tokens: int) -> tuple[str, str]:
    """("refuse" | "warn" | "ok", message) for running agents with a window of `tokens`."""
    if tokens < MIN_AGENT_WINDOW_TOKENS:
        return "refuse", (f"A context window of {tokens:,} tokens is too small for agent work (minimum "
                          f"{MIN_AGENT_WINDOW_TOKENS:,}); choose a model with a larger window.")
    if tokens < WARN_WINDOW_TOKENS:
        return "warn", (f"A context window of {tokens:,} tokens is small (below {WARN_WINDOW_TOKENS:,}): expect "
                        "frequent compaction; lower the summarizer byte limits.")
    return "ok", f"A context window of {tokens:,} tokens is enough for agent work."
