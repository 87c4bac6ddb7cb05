"""AST helpers PentAGI uses around summarization (§1.7): append a human turn, answer a call, normalize ids,
sanitize arguments, and the reasoning helpers. AST helpers change the AST in place (new pair objects,
new message dicts); message helpers return new lists.
"""
from __future__ import annotations

import random
from collections.abc import Iterable
from typing import Any

from summarizer.chain.messages import clone, valid_calls
from summarizer.chain.nodes import REQUEST_RESPONSE, SUMMARIZATION, BodyPair, ChainAST, ChainError, Header, Section
from summarizer.chain.parse import human_parts, merge_humans
from summarizer.chain.sanitize import sanitize_arguments
from summarizer.chain.toolcall_ids import content_rng, parse_id_template

__all__ = [
    "append_human", "add_tool_response", "find_tool_call_responses", "normalize_tool_call_ids",
    "sanitize_tool_call_arguments", "clear_reasoning", "contains_tool_call_reasoning",
    "extract_reasoning_message", "has_reasoning",
]

Message = dict[str, Any]


def has_reasoning(value: Any) -> bool:
    """An empty reasoning object (no content, no signature) counts as none."""
    return isinstance(value, dict) and bool(value.get("content") or value.get("signature"))


def append_human(ast: ChainAST, text: str) -> None:
    msg = {"role": "user", "content": text}
    last = ast.sections[-1] if ast.sections else None
    if last is None or last.body:
        ast.sections.append(Section(Header(human=msg)))
    elif last.header.human is None:
        last.header = Header(last.header.system, msg, last.header.system_lineage, ())
    else:
        merged = merge_humans(last.header.human, human_parts(msg))
        last.header = Header(last.header.system, merged, last.header.system_lineage, last.header.human_lineage)


def _rr_pairs(ast: ChainAST) -> Iterable[tuple[Section, int, BodyPair]]:
    for sec in ast.sections:
        for j, pair in enumerate(sec.body):
            if pair.kind == REQUEST_RESPONSE:
                yield sec, j, pair


def find_tool_call_responses(ast: ChainAST, call_id: str) -> list[Message]:
    return [t for _, _, pair in _rr_pairs(ast) for t in pair.tools if t["tool_call_id"] == call_id]


def add_tool_response(ast: ChainAST, call_id: str, name: str, content: str) -> None:
    """Replace the content of an existing answer to `call_id`, or add one; unknown id is a ChainError."""
    for sec, j, pair in _rr_pairs(ast):
        if call_id not in pair.call_ids():
            continue
        tools = list(pair.tools)
        lineage = list(pair.lineage)
        for k, tool in enumerate(tools):
            if tool["tool_call_id"] == call_id:
                tools[k] = {**tool, "content": content}
                break
        else:
            tools.append({"role": "tool", "tool_call_id": call_id, "name": name, "content": content})
            lineage.append(pair.lineage[0])
        sec.body[j] = BodyPair(pair.ai, tuple(tools), tuple(lineage))
        return
    raise ChainError(f"no tool call with id {call_id!r} in the chain")


def _renamed_pair(pair: BodyPair, mapping: dict[str, str]) -> BodyPair:
    calls = [{**c, "id": mapping.get(c["id"], c["id"])} if c.get("function") is not None else c
             for c in pair.ai.get("tool_calls") or ()]
    tools = tuple({**t, "tool_call_id": mapping[t["tool_call_id"]]} if t["tool_call_id"] in mapping else t
                  for t in pair.tools)
    return BodyPair({**pair.ai, "tool_calls": calls}, tools, pair.lineage)


def normalize_tool_call_ids(ast: ChainAST, template: str, rng: random.Random | None = None) -> int:
    """Give every call id that does not fit `template` a new one (derived from the old id unless `rng` is
    given); answers follow. Returns how many changed."""
    tpl = parse_id_template(template)
    taken = {c["id"] for sec in ast.sections for p in sec.body for c in valid_calls(p.ai)}
    changed = 0
    for sec in ast.sections:
        for j, pair in enumerate(sec.body):
            if pair.kind not in (REQUEST_RESPONSE, SUMMARIZATION):
                continue
            mapping: dict[str, str] = {}
            for call in valid_calls(pair.ai):
                name = call["function"]["name"]
                if tpl.matches(call["id"], name):
                    continue
                source = rng if rng is not None else content_rng(call["id"], name)  # same chain in, same ids out
                new_id = tpl.generate(name, source)
                while new_id in taken:
                    new_id = tpl.generate(name, source)
                taken.add(new_id)
                mapping[call["id"]] = new_id
            if mapping:
                sec.body[j] = _renamed_pair(pair, mapping)
                changed += len(mapping)
    return changed


def sanitize_tool_call_arguments(ast: ChainAST) -> int:
    """Make every call's arguments valid JSON (PentAGI's sanitizer). Returns how many calls changed."""
    changed = 0
    for sec in ast.sections:
        for j, pair in enumerate(sec.body):
            calls = pair.ai.get("tool_calls") or []
            fixed = []
            for call in calls:
                fn = call.get("function")
                clean = sanitize_arguments(fn["arguments"]) if fn is not None else None
                if fn is not None and clean != fn["arguments"]:
                    call = {**call, "function": {**fn, "arguments": clean}}
                    changed += 1
                fixed.append(call)
            if fixed != calls:
                sec.body[j] = BodyPair({**pair.ai, "tool_calls": fixed}, pair.tools, pair.lineage)
    return changed


def clear_reasoning(messages: list[Message]) -> list[Message]:
    """Drop reasoning from every assistant message and tool call (needed when the provider changes)."""
    out = []
    for msg in messages:
        msg = {k: v for k, v in msg.items() if k != "reasoning"}
        if msg.get("tool_calls"):
            msg["tool_calls"] = [{k: v for k, v in c.items() if k != "reasoning"} for c in msg["tool_calls"]]
        out.append(msg)
    return out


def contains_tool_call_reasoning(messages: Iterable[Message]) -> bool:
    """True iff some tool call carries reasoning; reasoning on text does not count."""
    return any(c.get("reasoning") is not None for m in messages for c in m.get("tool_calls") or ())


def extract_reasoning_message(messages: Iterable[Message]) -> Message | None:
    """The first assistant text part with non-empty reasoning, as a new assistant message (text + reasoning)."""
    for msg in messages:
        if msg.get("role") != "assistant" or not has_reasoning(msg.get("reasoning")):
            continue
        content = msg.get("content")
        if isinstance(content, list):
            texts = [p["text"] for p in content if p.get("type") == "text"]
            content = texts[0] if texts else None
        return {"role": "assistant", "content": content, "reasoning": clone(msg["reasoning"])}
    return None
