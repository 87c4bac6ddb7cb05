"""Importers/exporters: detection, each format's mapping, round-trips, and clear errors on broken files."""
from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from summarizer.chain.messages import validate_messages
from summarizer.formats.convert import TRANSCRIPT_FORMATS, FormatError, detect_format, export_chain, import_chain
from tests.conftest import corpus_params, load_corpus

CALL_ID = "call_aaaaaaaaaaaaaaaaaaaaaaaa"
OPENAI_CHAIN = [
    {"role": "system", "content": "sys"},
    {"role": "user", "content": "scan 10.0.0.5"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": CALL_ID, "type": "function", "function": {"name": "terminal", "arguments": '{"input":"nmap"}'}}]},
    {"role": "tool", "tool_call_id": CALL_ID, "content": "22/tcp open ssh"},
    {"role": "assistant", "content": "done"},
]

PENTAGI_CHAIN = [
    {"role": "system", "text": "You are a pentester."},
    {"role": "human", "text": "scan the host"},
    {"role": "ai", "parts": [
        {"type": "text", "text": "running two tools", "reasoning": {"content": "think", "signature": "c2ln"}},
        {"type": "tool_call", "tool_call": {"id": "call_1", "type": "function",
                                            "function": {"name": "terminal", "arguments": "{\"input\": \"ls\"}"}}},
        {"type": "tool_call", "tool_call": {"id": "call_2", "type": "function",
                                            "function": {"name": "browser", "arguments": "{}"}}},
    ]},
    {"role": "tool", "parts": [
        {"type": "tool_response", "tool_response": {"tool_call_id": "call_1", "name": "terminal", "content": "a b"}},
        {"type": "tool_response", "tool_response": {"tool_call_id": "call_2", "name": "other", "content": "<html>"}},
    ]},
    {"role": "human", "parts": [
        {"type": "text", "text": "look at this"},
        {"type": "image_url", "image_url": {"url": "https://example.com/x.png", "detail": "low"}},
    ]},
    {"role": "ai", "text": "It is a cat."},
]

PI_SESSION = "\n".join(json.dumps(e) for e in [
    {"type": "session", "version": 3, "id": "abc", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/tmp"},
    {"type": "model_change", "id": "m1", "parentId": None, "provider": "anthropic", "modelId": "claude"},
    {"type": "message", "id": "e1", "parentId": "m1", "message": {"role": "user", "content": "list files"}},
    {"type": "message", "id": "e2", "parentId": "e1", "message": {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "use ls", "thinkingSignature": "sig"},
        {"type": "text", "text": "Listing."},
        {"type": "toolCall", "id": "toolu_01", "name": "bash", "arguments": {"command": "ls -la"}}],
        "stopReason": "toolUse"}},
    {"type": "message", "id": "e3", "parentId": "e2", "message": {
        "role": "toolResult", "toolCallId": "toolu_01", "toolName": "bash",
        "content": [{"type": "text", "text": "a.txt\nb.txt"}], "isError": False}},
    {"type": "compaction", "id": "c1", "parentId": "e3", "summary": "s", "firstKeptEntryId": "e1",
     "tokensBefore": 10},
    {"type": "message", "id": "e4", "parentId": "c1", "message": {
        "role": "assistant", "content": [{"type": "text", "text": "Two files."}], "stopReason": "stop"}},
]) + "\n"


def test_it_detects_each_format_from_text_and_parsed_json():
    assert detect_format(json.dumps(OPENAI_CHAIN)) == "openai"
    assert detect_format({"messages": OPENAI_CHAIN}) == "openai"
    assert detect_format(json.dumps(PENTAGI_CHAIN)) == "pentagi"
    assert detect_format(PI_SESSION) == "openclaw"
    assert detect_format(PI_SESSION.encode()) == "openclaw"


def test_pentagi_calls_of_one_ai_message_become_one_assistant_message_and_responses_split():
    chain = import_chain(PENTAGI_CHAIN)
    assert [m["role"] for m in chain] == ["system", "user", "assistant", "tool", "tool", "user", "assistant"]
    ai = chain[2]
    assert [c["id"] for c in ai["tool_calls"]] == ["call_1", "call_2"]
    assert ai["content"] == "running two tools"
    assert ai["reasoning"] == {"content": "think", "signature": "c2ln"}
    assert chain[3] == {"role": "tool", "tool_call_id": "call_1", "content": "a b"}  # name repeats the call's
    assert chain[4]["name"] == "other"  # a name that differs from the call's is kept
    assert chain[5]["content"][1]["image_url"]["detail"] == "low"
    validate_messages(chain)


def test_pentagi_export_writes_single_text_messages_as_text_and_one_tool_message_per_result():
    out = export_chain(import_chain(PENTAGI_CHAIN), "pentagi")
    assert out[0] == {"role": "system", "text": "You are a pentester."}
    assert out[-1] == {"role": "ai", "text": "It is a cat."}
    tools = [m for m in out if m["role"] == "tool"]
    assert [len(m["parts"]) for m in tools] == [1, 1]
    assert tools[0]["parts"][0]["tool_response"]["name"] == "terminal"


def test_pentagi_binary_parts_become_data_urls_the_engine_accepts():
    chain = import_chain([{"role": "human", "parts": [
        {"type": "binary", "binary": {"mime_type": "image/png", "data": "iVBORw0K"}}]}], "pentagi")
    assert chain[0]["content"] == [{"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0K"}}]
    validate_messages(chain)


def test_pi_session_import_keeps_the_active_branch_and_ignores_other_entries():
    chain = import_chain(PI_SESSION)
    assert [m["role"] for m in chain] == ["user", "assistant", "tool", "assistant"]
    ai = chain[1]
    assert ai["content"] == "Listing."
    assert ai["reasoning"] == {"content": "use ls", "signature": "sig"}
    assert ai["tool_calls"][0]["function"] == {"name": "bash", "arguments": '{"command": "ls -la"}'}
    assert chain[2] == {"role": "tool", "tool_call_id": "toolu_01", "content": "a.txt\nb.txt"}


def test_pi_import_follows_parent_links_past_an_abandoned_branch():
    entries = [
        {"type": "message", "id": "a", "parentId": None, "message": {"role": "user", "content": "q"}},
        {"type": "message", "id": "b", "parentId": "a", "message": {"role": "assistant", "content": [
            {"type": "text", "text": "abandoned"}]}},
        {"type": "message", "id": "c", "parentId": "a", "message": {"role": "assistant", "content": [
            {"type": "text", "text": "kept"}]}},
    ]
    chain = import_chain("\n".join(json.dumps(e) for e in entries))
    assert [m["content"] for m in chain] == ["q", "kept"]


@pytest.mark.parametrize("fmt", TRANSCRIPT_FORMATS)
@pytest.mark.parametrize("source", ["openai", "pentagi", "openclaw"])
def test_every_imported_chain_round_trips_through_every_format(source, fmt):
    chain = import_chain({"openai": OPENAI_CHAIN, "pentagi": PENTAGI_CHAIN, "openclaw": PI_SESSION}[source])
    exported = export_chain(chain, fmt)
    assert import_chain(exported, fmt) == chain
    text = exported if isinstance(exported, str) else json.dumps(exported)
    assert import_chain(text) == chain  # and detection finds the format again


@pytest.mark.parametrize("path", corpus_params())
def test_every_corpus_file_round_trips_in_all_three_formats(path):
    original = load_corpus(path)
    chain = import_chain(path.read_bytes())
    assert chain == original
    for fmt in TRANSCRIPT_FORMATS:
        assert import_chain(export_chain(chain, fmt), fmt) == original, fmt


def test_pi_export_keeps_argument_strings_that_are_not_canonical_json():
    chain = import_chain(OPENAI_CHAIN)  # '{"input":"nmap"}' has no spaces: json.dumps would add them
    line = [json.loads(x) for x in export_chain(chain, "openclaw").splitlines()][3]
    assert line["message"]["content"][0]["arguments"] == {"input": "nmap"}
    assert import_chain(export_chain(chain, "openclaw"))[2]["tool_calls"][0]["function"]["arguments"] == \
        '{"input":"nmap"}'


def test_system_messages_travel_through_pi_as_custom_entries():
    entries = [json.loads(x) for x in export_chain(import_chain(OPENAI_CHAIN), "openclaw").splitlines()]
    assert entries[0]["type"] == "session"
    assert entries[1]["type"] == "custom" and entries[1]["data"] == {"content": "sys"}


def test_openai_reasoning_content_maps_onto_the_reasoning_key():
    chain = import_chain([{"role": "user", "content": "q"},
                          {"role": "assistant", "content": "a", "reasoning_content": "because"}])
    assert chain[1]["reasoning"] == {"content": "because", "signature": None}


@pytest.mark.parametrize("data, fmt, where", [
    ('[{"role": "user", "content": "x"}', None, "line 1"),
    ('{"type":"session"}\n{"type":"message","message":{"role":"user","content":"x"}}\n{broken\n', None, "line 3"),
    ('{"type":"session"}\n[1, 2]\n', "openclaw", "line 2"),
    # an unknown pi content block was a NameError (an unhandled 500 in the import API) before
    ('{"type":"session"}\n{"type":"message","message":{"role":"user","content":[{"type":"video"}]}}\n', "openclaw",
     "line 2"),
    ([{"role": "human", "parts": [{"type": "video"}]}], "pentagi", "message 0"),
    ([{"role": "human", "text": "q"}, {"role": "wizard", "text": "x"}], "pentagi", "message 1"),
    ([{"role": "user", "content": "q"}, "not a message"], "openai", "message 1"),
    ({"title": "no messages"}, None, ""),
    ("", None, ""),
    (b"\xff\xfe\x00", None, ""),
    ("[]", "yaml", ""),
])
def test_broken_files_raise_a_format_error_saying_where(data, fmt, where):
    with pytest.raises(FormatError) as info:
        import_chain(data, fmt)
    assert where in str(info.value)


TEXT = st.text(max_size=30)
CALL = st.builds(lambda i, n, a: {"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": a}},
                 st.integers(0, 10**6), st.sampled_from(["terminal", "browser"]),
                 st.sampled_from(['{"a": 1}', '{"a":1}', "not json", "{}"]))


@st.composite
def chains(draw):
    out = [{"role": "system", "content": draw(TEXT)}] if draw(st.booleans()) else []
    for _ in range(draw(st.integers(1, 4))):
        out.append({"role": "user", "content": draw(TEXT)})
        calls = draw(st.lists(CALL, max_size=3, unique_by=lambda c: c["id"]))
        ai = {"role": "assistant", "content": draw(st.one_of(st.none(), TEXT)) if calls else draw(TEXT)}
        if calls:
            ai["tool_calls"] = calls
        out.append(ai)
        out += [{"role": "tool", "tool_call_id": c["id"], "content": draw(TEXT)} for c in calls]
    return out


@given(chains(), st.sampled_from(TRANSCRIPT_FORMATS))
def test_round_trip_holds_for_generated_chains(chain, fmt):
    assert import_chain(export_chain(chain, fmt), fmt) == chain


def test_pi_lines_split_only_at_newlines_not_at_unicode_line_separators():
    chain = [{"role": "user", "content": "a\x85b\u2028c\rd"}, {"role": "assistant", "content": "ok"}]
    assert import_chain(export_chain(chain, "openclaw")) == chain
