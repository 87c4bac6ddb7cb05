"""Anthropic content blocks <-> our content parts, tool calls and reasoning (see summarizer.formats.anthropic).

text and image blocks are content parts, `tool_use` is a tool call, the thinking blocks (`thinking`,
`redacted_thinking`) together are the message's reasoning; every other block (document, search_result,
server_tool_use, web_search_tool_result, container_upload, mcp_*, types not invented yet) has no counterpart
and travels only in the message's extension.
"""
from __future__ import annotations

import json
from typing import Any

from summarizer.formats.common import FormatError, _require
from summarizer.formats.wire import Block, Part, data_url, require_str, split_data_url

__all__ = ["THINKING_TYPES", "ANTHROPIC_BLOCK_TYPES", "check_block", "block_part", "part_block", "block_call",
           "call_block", "blocks_reasoning", "reasoning_block", "result_content", "content_blocks"]

THINKING_TYPES = ("thinking", "redacted_thinking")
# Block types only Anthropic's format has (OpenAI's chat parts are text / image_url / input_audio / file).
ANTHROPIC_BLOCK_TYPES = frozenset({
    "image", "document", "search_result", "tool_use", "tool_result", "thinking", "redacted_thinking",
    "server_tool_use", "web_search_tool_result", "web_fetch_tool_result", "code_execution_tool_result",
    "bash_code_execution_tool_result", "text_editor_code_execution_tool_result", "tool_search_tool_result",
    "container_upload", "mcp_tool_use", "mcp_tool_result", "mid_conv_system",
})


def check_block(block: Any, index: int) -> Block:
    """The block when its known fields are well-formed (unknown types are not checked: they are kept)."""
    _require(isinstance(block, dict) and isinstance(block.get("type"), str), "each content block needs a 'type'",
             index=index)
    kind = block["type"]
    if kind == "text":
        require_str(block.get("text"), "a text block's 'text'", index)
    elif kind == "image":
        _require(isinstance(block.get("source"), dict), "an image block needs a 'source' object", index=index)
    elif kind == "tool_use":
        require_str(block.get("id"), "a tool_use block's 'id'", index, empty=False)
        require_str(block.get("name"), "a tool_use block's 'name'", index)
        _require(isinstance(block.get("input"), dict), "a tool_use block's 'input' must be an object", index=index)
    elif kind == "thinking":
        require_str(block.get("thinking"), "a thinking block's 'thinking'", index)
        if not isinstance(block.get("signature"), str) or not block["signature"]:
            raise FormatError("a thinking block without its signature cannot be sent back to the model",
                              index=index)
    elif kind == "redacted_thinking":
        require_str(block.get("data"), "a redacted_thinking block's 'data'", index, empty=False)
    checked: Block = block
    return checked


def block_part(block: Block) -> Part | None:
    """The content part a text or image block stands for; None for blocks without a counterpart."""
    kind = block.get("type")
    if kind == "text":
        return {"type": "text", "text": block["text"]}
    if kind == "image":
        source = block["source"]
        if source.get("type") == "base64" and isinstance(source.get("data"), str):
            return {"type": "image_url", "image_url": {"url": data_url(str(source.get("media_type")),
                                                                       source["data"])}}
        if source.get("type") == "url" and isinstance(source.get("url"), str):
            return {"type": "image_url", "image_url": {"url": source["url"]}}
    return None


def part_block(part: Part, like: Block | None = None) -> Block:
    """An Anthropic block for one (new or changed) content part, keeping the cache_control of `like`, the
    block it replaces (citations pointed into the old text and are dropped)."""
    keep = {k: v for k, v in (like or {}).items() if k == "cache_control"}
    if part.get("type") == "image_url":
        url = str((part.get("image_url") or {}).get("url", ""))
        split = split_data_url(url)
        source = ({"type": "base64", "media_type": split[0], "data": split[1]} if split
                  else {"type": "url", "url": url})
        return {"type": "image", "source": source, **keep}
    return {"type": "text", "text": str(part.get("text", "")), **keep}


def block_call(block: Block) -> dict[str, Any]:
    return {"id": block["id"], "type": "function",
            "function": {"name": block["name"], "arguments": json.dumps(block["input"], ensure_ascii=False)}}


def call_block(call: dict[str, Any], like: Block | None = None) -> Block:
    """A tool_use block for a tool call: arguments that are not a JSON object become an empty input."""
    fn = call.get("function") or {}
    try:
        parsed = json.loads(fn.get("arguments") or "{}")
    except (TypeError, ValueError):
        parsed = None
    extra = {k: v for k, v in (like or {}).items() if k not in ("type", "id", "name", "input")}
    return {"type": "tool_use", "id": call.get("id", ""), "name": fn.get("name", ""),
            "input": parsed if isinstance(parsed, dict) else {}, **extra}


def blocks_reasoning(blocks: list[Block]) -> dict[str, Any] | None:
    """The reasoning a turn's thinking blocks stand for: their text and the first signature."""
    thinking = [b for b in blocks if b.get("type") == "thinking"]
    if not thinking and not any(b.get("type") == "redacted_thinking" for b in blocks):
        return None
    return {"content": "\n\n".join(b["thinking"] for b in thinking) if thinking else None,
            "signature": thinking[0]["signature"] if thinking else None}


def reasoning_block(reasoning: Any) -> Block | None:
    """A thinking block for reasoning that has both text and a signature (the API refuses one without)."""
    if not isinstance(reasoning, dict):
        return None
    text, signature = reasoning.get("content"), reasoning.get("signature")
    if isinstance(text, str) and isinstance(signature, str) and signature:
        return {"type": "thinking", "thinking": text, "signature": signature}
    return None


def result_content(block: Block, index: int) -> Any:
    """A tool_result's content as our tool message content: a string, or the parts of its blocks."""
    content = block.get("content", "")
    if isinstance(content, str):
        return content
    _require(isinstance(content, list), "a tool_result's 'content' must be a string or a list of blocks",
             index=index)
    return [p for p in (block_part(check_block(b, index)) for b in content) if p is not None]


def content_blocks(content: Any) -> list[Part]:
    """Our content (a string, null or parts) as a list of parts; an empty string is no part at all."""
    if content is None or content == "":
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [p for p in content if isinstance(p, dict)]
