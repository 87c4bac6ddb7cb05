"""Hypothesis strategies: valid Anthropic Messages and OpenAI Responses requests using every block / item type.

Written from the SDKs' request types (anthropic `types/message_param.py` and its block params, openai
`types/responses/response_input_item_param.py`), not from recorded traffic: every call a request issues is
answered later (tool results in the next user turn, outputs after their call), signatures and encrypted
content are opaque base64-ish strings, and unknown types appear where a newer API would put them.
"""
from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from summarizer.chain.messages import content_text, validate_messages
from summarizer.formats.convert import export_chain, import_chain

__all__ = ["anthropic_requests", "responses_requests", "assert_lossless", "assert_converges", "model_view"]

Block = dict[str, Any]
TEXT = st.text(alphabet="ab c\né漢<>&\"{}\\", max_size=12)
OPAQUE = st.text(alphabet="ABCDEFabcdef0123456789+/=", min_size=1, max_size=16)
CACHE = st.sampled_from([{}, {"cache_control": {"type": "ephemeral"}},
                         {"cache_control": {"type": "ephemeral", "ttl": "1h"}}])
INPUT = st.dictionaries(st.sampled_from(["cmd", "path", "n"]), st.one_of(TEXT, st.integers(), st.booleans()),
                        max_size=3)


def _text_block(draw: st.DrawFn) -> Block:
    block: Block = {"type": "text", "text": draw(TEXT.filter(bool)), **draw(CACHE)}
    if draw(st.integers(0, 5)) == 0:
        block["citations"] = [{"type": "char_location", "cited_text": draw(TEXT), "document_index": 0,
                               "start_char_index": 0, "end_char_index": 3}]
    return block


def _user_block(draw: st.DrawFn) -> Block:
    kind = draw(st.sampled_from(["text", "text", "image64", "image_url", "document", "unknown"]))
    if kind == "text":
        return _text_block(draw)
    if kind == "image64":
        return {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": draw(OPAQUE)},
                **draw(CACHE)}
    if kind == "image_url":
        return {"type": "image", "source": {"type": "url", "url": "https://example.com/" + draw(OPAQUE)}}
    if kind == "document":
        return {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": draw(TEXT)},
                "title": draw(TEXT)}
    return {"type": "hologram_2031", "payload": draw(OPAQUE)}


def _tool_result(draw: st.DrawFn, call_id: str) -> Block:
    content = draw(st.sampled_from(["string", "blocks", "absent"]))
    block: Block = {"type": "tool_result", "tool_use_id": call_id}
    if content == "string":
        block["content"] = draw(TEXT)
    elif content == "blocks":
        block["content"] = [draw(st.builds(dict, type=st.just("text"), text=TEXT.filter(bool)))
                            for _ in range(draw(st.integers(0, 2)))]
    if draw(st.booleans()):
        block["is_error"] = draw(st.booleans())
    return {**block, **draw(CACHE)}


def _assistant_turn(draw: st.DrawFn, ids: list[int]) -> tuple[dict[str, Any], list[str]]:
    if draw(st.integers(0, 5)) == 0:
        return {"role": "assistant", "content": draw(TEXT)}, []
    blocks: list[Block] = []
    for _ in range(draw(st.integers(0, 2))):
        if draw(st.booleans()):
            blocks.append({"type": "thinking", "thinking": draw(TEXT), "signature": draw(OPAQUE)})
        else:
            blocks.append({"type": "redacted_thinking", "data": draw(OPAQUE)})
    calls: list[str] = []
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["text", "tool_use", "tool_use", "server", "unknown"]))
        ids[0] += 1
        if kind == "text":
            blocks.append(_text_block(draw))
        elif kind == "tool_use":
            calls.append(f"toolu_{ids[0]:04d}")
            blocks.append({"type": "tool_use", "id": calls[-1], "name": draw(st.sampled_from(["bash", "read"])),
                           "input": draw(INPUT), **draw(CACHE)})
        elif kind == "server":
            blocks += [{"type": "server_tool_use", "id": f"srvtoolu_{ids[0]}", "name": "web_search",
                        "input": {"query": draw(TEXT)}},
                       {"type": "web_search_tool_result", "tool_use_id": f"srvtoolu_{ids[0]}",
                        "content": [{"type": "web_search_result", "url": "https://example.com", "title": draw(TEXT),
                                     "encrypted_content": draw(OPAQUE)}]}]
        else:
            blocks.append({"type": "mcp_tool_use", "id": f"mcptoolu_{ids[0]}", "name": "x", "server_name": "s",
                           "input": {}})
    return {"role": "assistant", "content": blocks}, calls


def _user_turns(draw: st.DrawFn, answering: list[str]) -> list[dict[str, Any]]:
    if not answering and draw(st.integers(0, 3)) == 0:
        return [{"role": "user", "content": draw(TEXT)}]
    results = [_tool_result(draw, call_id) for call_id in draw(st.permutations(answering))]
    others = [_user_block(draw) for _ in range(draw(st.integers(0 if results else 1, 2)))]
    if results and others and draw(st.booleans()):  # the text in a user turn of its own after the results
        return [{"role": "user", "content": results}, {"role": "user", "content": others}]
    blocks = results + others
    if draw(st.booleans()):
        blocks = draw(st.permutations(blocks))  # interleaved: the API wants results first, we keep any order
    turn: dict[str, Any] = {"role": "user", "content": blocks}
    if draw(st.integers(0, 6)) == 0:
        turn["x_client_note"] = draw(TEXT)  # a field of the turn we do not know: kept
    return [turn]


@st.composite
def anthropic_requests(draw: st.DrawFn) -> dict[str, Any]:
    """`{"system"?, "messages"}` of a valid request: user first, every tool_use answered in the next turn."""
    request: dict[str, Any] = {}
    system = draw(st.sampled_from(["none", "string", "blocks"]))
    if system == "string":
        request["system"] = draw(TEXT)
    elif system == "blocks":
        request["system"] = [_text_block(draw) for _ in range(draw(st.integers(1, 3)))]
    ids, turns, answering = [0], [], []
    for _ in range(draw(st.integers(1, 5))):
        turns += _user_turns(draw, answering)
        if draw(st.integers(0, 8)) == 0:
            turns.append({"role": "system", "content": draw(TEXT)})
        assistant, answering = _assistant_turn(draw, ids)
        turns.append(assistant)
    if answering:
        turns += _user_turns(draw, answering)
    request["messages"] = turns
    return request


# ----------------------------------------------------------------------------------------------- responses

def _message_item(draw: st.DrawFn, role: str) -> dict[str, Any]:
    if role == "assistant":
        if draw(st.booleans()):
            return {"role": "assistant", "content": draw(TEXT)}
        return {"type": "message", "id": f"msg_{draw(OPAQUE)}", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": draw(TEXT), "annotations": []}
                            for _ in range(draw(st.integers(1, 2)))]}
    parts = draw(st.lists(st.sampled_from(["text", "text", "image", "file"]), max_size=3))
    content: Any = draw(TEXT) if not parts else [
        {"type": "input_text", "text": draw(TEXT)} if p == "text" else
        {"type": "input_image", "image_url": "https://example.com/i.png", "detail": draw(st.sampled_from(
            ["auto", "low", "high"]))} if p == "image" else
        {"type": "input_file", "file_id": f"file_{draw(OPAQUE)}"} for p in parts]
    item: dict[str, Any] = {"role": role, "content": content}
    return {"type": "message", **item} if draw(st.booleans()) else item


def _call(draw: st.DrawFn, call_id: str) -> dict[str, Any]:
    if draw(st.integers(0, 4)) == 0:
        return {"type": "custom_tool_call", "call_id": call_id, "name": "apply_patch", "input": draw(TEXT)}
    item = {"type": "function_call", "call_id": call_id, "name": draw(st.sampled_from(["shell", "read"])),
            "arguments": draw(st.sampled_from(['{"cmd": "ls"}', '{"cmd":"nmap -p 22"}', "{}", "not json"]))}
    return {**item, "id": f"fc_{call_id}", "status": "completed"} if draw(st.booleans()) else item


def _output(draw: st.DrawFn, call: dict[str, Any]) -> dict[str, Any]:
    kind = "custom_tool_call_output" if call["type"] == "custom_tool_call" else "function_call_output"
    output: Any = draw(TEXT) if draw(st.booleans()) else [{"type": "input_text", "text": draw(TEXT)}]
    return {"type": kind, "call_id": call["call_id"], "output": output}


def _opaque_item(draw: st.DrawFn) -> dict[str, Any]:
    return draw(st.sampled_from([
        {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search", "query": "q"}},
        {"type": "item_reference", "id": "msg_old"},
        {"type": "compaction", "encrypted_content": "Zm9v"},
        {"type": "telepathy_call", "id": "tp_1"},
    ]))


def _assistant_run(draw: st.DrawFn, ids: list[int]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    run: list[dict[str, Any]] = []
    if draw(st.booleans()):
        reasoning: dict[str, Any] = {"type": "reasoning", "id": f"rs_{draw(OPAQUE)}",
                                     "summary": [{"type": "summary_text", "text": draw(TEXT)}
                                                 for _ in range(draw(st.integers(0, 2)))]}
        if draw(st.booleans()):
            reasoning["encrypted_content"] = draw(OPAQUE)
        run.append(reasoning)
    calls = []
    for _ in range(draw(st.integers(0, 3))):
        ids[0] += 1
        calls.append(_call(draw, f"call_{ids[0]:04d}"))
    if not calls or draw(st.booleans()):
        run.append(_message_item(draw, "assistant"))
    run += calls
    if draw(st.integers(0, 4)) == 0:
        run.insert(draw(st.integers(0, len(run))), _opaque_item(draw))
    return run, calls


@st.composite
def responses_requests(draw: st.DrawFn) -> dict[str, Any]:
    """`{"instructions"?, "input"}` of a valid request: every output follows its call."""
    request: dict[str, Any] = {}
    if draw(st.booleans()):
        request["instructions"] = draw(TEXT)
    if draw(st.integers(0, 5)) == 0:
        request["input"] = draw(TEXT)
        return request
    items: list[dict[str, Any]] = []
    if draw(st.integers(0, 3)) == 0:
        items.append(_message_item(draw, draw(st.sampled_from(["developer", "system"]))))
    ids = [0]
    for _ in range(draw(st.integers(1, 4))):
        items.append(_message_item(draw, "user"))
        run, calls = _assistant_run(draw, ids)
        items += run + [_output(draw, c) for c in draw(st.permutations(calls))]
    if draw(st.integers(0, 4)) == 0:
        items.insert(draw(st.integers(0, len(items))), _opaque_item(draw))
    request["input"] = items
    return request


def assert_appendable(chain: list[dict[str, Any]]) -> None:
    """The app's pairing rules (flows/ingest/pairing.py): a system message only first, a chain opening with
    system or user, every tool message answering, once, a call of the assistant message before it."""
    calls: set[str] = set()
    answered: set[str] = set()
    open_pair = False
    for index, msg in enumerate(chain):
        assert msg["role"] != "system" or index == 0, f"message {index}: a system message after the first"
        assert index or msg["role"] in ("system", "user"), "a chain opens with system or user"
        if msg["role"] == "assistant":
            calls, answered, open_pair = {c["id"] for c in msg.get("tool_calls", [])}, set(), True
        elif msg["role"] == "tool":
            assert open_pair and msg["tool_call_id"] in calls - answered, f"message {index}: orphan result"
            answered.add(msg["tool_call_id"])
        else:
            open_pair = False


def assert_lossless(request: dict[str, Any], fmt: str) -> None:
    """A request read as a file becomes valid, appendable messages that export back to exactly the request."""
    chain = import_chain(json.dumps(request), fmt)
    validate_messages(chain)
    assert_appendable(chain)
    assert export_chain(json.loads(json.dumps(chain)), fmt) == request  # through JSON, as Message rows give it


def model_view(chain: list[dict[str, Any]]) -> list[tuple[str, ...]]:
    """What the model reads of a chain: texts, calls and results in order (an empty text is nothing)."""
    seen: list[tuple[str, ...]] = []
    for msg in chain:
        if content_text(msg):
            seen.append(("text", msg["role"], content_text(msg)))
        seen += [("call", c["id"], c["function"]["name"]) for c in msg.get("tool_calls", [])]
        if msg["role"] == "tool":
            seen.append(("result", msg["tool_call_id"]))
    return seen


def assert_converges(chain: list[dict[str, Any]], fmt: str) -> None:
    """Any chain exports to a request that reads back to what the model saw and exports to itself again."""
    request = export_chain(chain, fmt)
    again = import_chain(json.dumps(request), fmt)
    validate_messages(again)
    assert export_chain(again, fmt) == request
    assert model_view(again) == model_view(chain)
    assert import_chain(json.dumps(request)) == again  # detection picks the right importer
