"""Model windows: the built-in catalog, /v1/models payloads, and the window thresholds."""
from __future__ import annotations

import json
from importlib.resources import files

import pytest
from hypothesis import given
from hypothesis import strategies as st

from summarizer.tokens.catalog import (
    MIN_AGENT_WINDOW_TOKENS,
    WARN_WINDOW_TOKENS,
    ModelInfo,
    catalog_models,
    listed_id_matches,
    lookup_model,
    window_check,
    window_from_models_payload,
)

REQUIRED_FAMILIES = [
    "gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-4.1-mini", "o1", "o3", "o3-mini", "o4-mini", "gpt-5", "gpt-5-mini",
    "gpt-4-turbo", "gpt-3.5-turbo", "claude-3-5-sonnet", "claude-3-7-sonnet", "claude-sonnet-4", "claude-opus-4",
    "claude-3-5-haiku", "gemini-1.5-pro", "gemini-2.0-flash", "gemini-2.5-pro", "gemini-2.5-flash", "deepseek-chat",
    "deepseek-reasoner", "qwen2.5-72b-instruct", "qwen3-32b", "llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b",
    "llama-3.3-70b", "mistral-large", "mistral-small", "codestral",
]


@pytest.mark.parametrize("model", REQUIRED_FAMILIES)
def test_the_catalog_knows_the_common_model_families(model):
    info = lookup_model(model)
    assert info is not None and info.source == "catalog"
    assert 0 < info.max_output_tokens <= info.context_window


def test_every_catalog_entry_is_sane():
    raw = json.loads(files("summarizer.tokens").joinpath("data/models.json").read_text(encoding="utf-8"))
    assert len(catalog_models()) == len(raw["models"])
    for info in catalog_models():
        assert info.context_window >= 8192 and 0 < info.max_output_tokens <= info.context_window, info


@pytest.mark.parametrize(
    ("spelling", "canonical"),
    [
        ("GPT-4o", "gpt-4o"),
        ("gpt-4o-2024-08-06", "gpt-4o"),
        ("openai/gpt-4o-mini", "gpt-4o-mini"),
        ("openrouter/anthropic/claude-3.5-sonnet", "claude-3-5-sonnet"),
        ("claude-3-5-sonnet-20241022", "claude-3-5-sonnet"),
        ("anthropic/claude-sonnet-4.5", "claude-sonnet-4-5"),
        ("anthropic.claude-3-5-sonnet-20240620-v1:0", "claude-3-5-sonnet"),
        ("claude-3-5-sonnet@20240620", "claude-3-5-sonnet"),
        ("meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b"),
        ("meta-llama/Meta-Llama-3.1-70B-Instruct-Turbo", "llama-3.1-70b"),
        ("llama-3.3-70b-versatile", "llama-3.3-70b"),
        ("Qwen/Qwen2.5-72B-Instruct", "qwen2.5-72b"),
        ("qwen/qwen-2.5-72b-instruct", "qwen2.5-72b"),
        ("deepseek/deepseek-chat-v3-0324", "deepseek-chat"),
        ("deepseek/deepseek-r1:free", "deepseek-reasoner"),
        ("models/gemini-2.0-flash-001", "gemini-2.0-flash"),
        ("gemini-2.5-pro-preview-06-05", "gemini-2.5-pro"),
        ("mistral-large-latest", "mistral-large"),
        ("mistralai/mistral-small-3.1-24b-instruct", "mistral-small"),
        ("o1-preview", "o1-preview"),
        ("o1-mini-2024-09-12", "o1-mini"),
        ("gpt-4-0613", "gpt-4"),
        ("gpt-4o-audio-preview", "gpt-4o"),
    ],
)
def test_lookup_normalizes_provider_spellings(spelling, canonical):
    assert lookup_model(spelling).model == canonical


def test_published_values_of_well_known_models():
    assert lookup_model("gpt-4o") == ModelInfo(128000, 16384, "gpt-4o", "openai")
    assert lookup_model("claude-3-5-sonnet").context_window == 200000
    assert lookup_model("gpt-3.5-turbo").context_window == 16385


@pytest.mark.parametrize("model", ["llama3.1:8b", "qwen2.5:72b", "my-finetune", "", None])
def test_unknown_and_ollama_tagged_models_have_no_window(model):
    assert lookup_model(model) is None


@pytest.mark.parametrize(
    ("entry", "window"),
    [
        ({"id": "m", "context_length": 131072}, 131072),                               # OpenRouter / LM Studio
        ({"id": "m", "max_model_len": 32768}, 32768),                                  # vLLM
        ({"id": "m", "context_window": 65536}, 65536),
        ({"id": "m", "meta": {"n_ctx_train": 131072}}, 131072),                       # llama.cpp
        ({"id": "m", "meta": {"n_ctx_train": 131072, "n_ctx": 8192}}, 8192),         # runtime window wins
        ({"id": "m", "context_length": 200000, "top_provider": {"context_length": 64000}}, 64000),
        ({"id": "m", "max_model_len": "40960"}, 40960),
    ],
)
def test_it_reads_the_window_fields_endpoints_report(entry, window):
    info = window_from_models_payload({"object": "list", "data": [entry]}, "m")
    assert info is not None and info.context_window == window and info.source == "endpoint"


def test_it_picks_the_requested_model_out_of_many():
    payload = {"data": [{"id": "a", "context_length": 1000}, {"id": "vendor/B", "context_length": 2000}]}
    assert window_from_models_payload(payload, "vendor/B").context_window == 2000
    assert window_from_models_payload(payload, "a").context_window == 1000
    assert window_from_models_payload(payload, "c") is None


@pytest.mark.parametrize("asked", ["b", "B", "vendor/b", "other/B", "VENDOR/B"])
def test_a_similar_id_is_another_model(asked):
    payload = {"data": [{"id": "vendor/B", "context_length": 2000}]}
    assert window_from_models_payload(payload, asked) is None


def test_a_lone_llama_cpp_model_says_nothing_about_another_model_name():
    # issue 20's example: the catalog's 128,000 for gpt-4o-mini, not the file's 8192
    payload = {"data": [{"id": "/models/qwen.gguf", "meta": {"n_ctx": 8192}}]}
    assert window_from_models_payload(payload, "gpt-4o-mini") is None
    assert lookup_model("gpt-4o-mini").context_window == 128_000
    assert window_from_models_payload(payload, "/models/qwen.gguf").context_window == 8192


def test_geminis_models_collection_prefix_names_the_same_model():
    payload = {"data": [{"id": "models/gemini-2.0-flash", "context_window": 1_048_576}]}
    assert window_from_models_payload(payload, "gemini-2.0-flash").context_window == 1_048_576
    assert window_from_models_payload(payload, "models/gemini-2.0-flash").context_window == 1_048_576


model_ids = st.text(alphabet="abcdefgz0123456789-./:_ABC", min_size=1, max_size=24)


@given(st.lists(st.tuples(model_ids, st.integers(1024, 2_000_000)), max_size=6), model_ids)
def test_only_an_entry_naming_the_model_gives_its_window(listing, asked):
    payload = {"data": [{"id": listed, "context_length": window} for listed, window in listing]}
    info = window_from_models_payload(payload, asked)
    named = [window for listed, window in listing if listed_id_matches(listed, asked)]
    assert (info.context_window if info else None) == (named[0] if named else None)
    assert all(listed in (asked, "models/" + asked) for listed, _ in listing if listed_id_matches(listed, asked))


@given(model_ids, st.integers(1024, 2_000_000), st.lists(st.tuples(model_ids, st.integers(1024, 2_000_000)),
                                                        max_size=6))
def test_other_models_in_the_listing_never_change_the_window_found(asked, window, others):
    others = [(listed, w) for listed, w in others if not listed_id_matches(listed, asked)]
    entries = [{"id": listed, "context_length": w} for listed, w in others]
    alone = window_from_models_payload({"data": [{"id": asked, "context_length": window}]}, asked)
    assert window_from_models_payload({"data": [*entries, {"id": asked, "context_length": window}]},
                                      asked) == alone
    assert window_from_models_payload({"data": entries}, asked) is None


def test_a_listing_without_a_window_is_unknown():
    payload = {"object": "list", "data": [{"id": "gemma-3-270m", "object": "model", "owned_by": "me"}]}
    assert window_from_models_payload(payload, "gemma-3-270m") is None


@pytest.mark.parametrize("payload", [None, "nope", 42, [], {}, {"data": "x"}, [1, 2], {"data": [{"id": "m",
                                                                                               "context_length": -5}]}])
def test_malformed_payloads_give_none_not_errors(payload):
    assert window_from_models_payload(payload, "m") is None


def test_max_output_comes_from_the_payload_else_the_catalog():
    reported = {"data": [{"id": "x", "context_length": 100000, "top_provider": {"max_completion_tokens": 4000}}]}
    assert window_from_models_payload(reported, "x").max_output_tokens == 4000
    known = {"data": [{"id": "openai/gpt-4o", "context_length": 128000}]}
    assert window_from_models_payload(known, "openai/gpt-4o").max_output_tokens == 16384
    unknown = {"data": [{"id": "x", "context_length": 100000}]}
    assert window_from_models_payload(unknown, "x").max_output_tokens is None


@pytest.mark.parametrize(
    ("tokens", "verdict"),
    [(8192, "refuse"), (MIN_AGENT_WINDOW_TOKENS - 1, "refuse"), (MIN_AGENT_WINDOW_TOKENS, "warn"),
     (WARN_WINDOW_TOKENS - 1, "warn"), (WARN_WINDOW_TOKENS, "ok"), (128000, "ok")],
)
def test_window_check_refuses_tiny_windows_and_warns_on_small_ones(tokens, verdict):
    result, message = window_check(tokens)
    assert result == verdict and f"{tokens:,}" in message


def test_the_thresholds_are_the_documented_ones():
    assert (MIN_AGENT_WINDOW_TOKENS, WARN_WINDOW_TOKENS) == (16000, 32000)
