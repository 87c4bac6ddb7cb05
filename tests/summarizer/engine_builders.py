"""Small builders for chains in tests of the summarizer engine (the fake summarizer lives in tests.fakes)."""
from __future__ import annotations

from typing import Any

from summarizer.chain.nodes import ChainAST
from summarizer.passes.stages import PassContext, PassGen
from summarizer.passes.summarize import drive_sync
from tests.fakes import FakeSummarizer

Message = dict[str, Any]
ARGS = '{"cmd": "ls"}'


def system(text: str = "You are a pentest agent.") -> Message:
    return {"role": "system", "content": text}


def human(text: str) -> Message:
    return {"role": "user", "content": text}


def ai(text: str | None = None, *calls: dict[str, Any], reasoning: dict[str, Any] | None = None) -> Message:
    msg: Message = {"role": "assistant", "content": text}
    if calls:
        msg["tool_calls"] = list(calls)
    if reasoning is not None:
        msg["reasoning"] = reasoning
    return msg


def call(call_id: str, name: str = "terminal", args: str = ARGS, reasoning: dict[str, Any] | None = None):
    out: dict[str, Any] = {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}
    if reasoning is not None:
        out["reasoning"] = reasoning
    return out


def tool(call_id: str, content: str, name: str | None = None) -> Message:
    msg: Message = {"role": "tool", "tool_call_id": call_id, "content": content}
    if name is not None:
        msg["name"] = name
    return msg


def rr(call_id: str, content: str, name: str = "terminal", args: str = ARGS, **kw: Any) -> list[Message]:
    return [ai(None, call(call_id, name, args, kw.get("call_reasoning")), reasoning=kw.get("reasoning")),
            tool(call_id, content)]


def rr_of_size(call_id: str, size: int, name: str = "terminal") -> list[Message]:
    """A request/response pair whose PentAGI size is exactly `size` bytes."""
    overhead = 2 * len(call_id) + len("function") + 2 * len(name) + len(ARGS)
    assert size >= overhead, f"size {size} below the pair's fixed cost {overhead}"
    return rr(call_id, "x" * (size - overhead), name)


def fake_signature_free(messages: list[Message]) -> bool:
    return not any(c.get("reasoning") for m in messages for c in m.get("tool_calls") or ())


def run_pass(gen: PassGen, summarizer: FakeSummarizer) -> None:
    drive_sync(gen, summarizer)


def ctx() -> PassContext:
    import random
    return PassContext("call_{r:24:x}", random.Random(7))


def section_kinds(ast: ChainAST) -> list[list[str]]:
    return [[p.kind for p in s.body] for s in ast.sections]
