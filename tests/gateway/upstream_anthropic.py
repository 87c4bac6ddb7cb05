"""A scripted Anthropic Messages upstream on loopback that enforces the API's rules like the real one.

`POST /v1/messages` (also `?beta=true`) answers a tool-using 'model': a `tool_use` per user request, a text
answer once its result is in, a signed thinking block first when the request enables thinking; JSON, or SSE
with the event names when `stream` is set. `POST /v1/messages/count_tokens` answers `{"input_tokens"}` (a 404,
as from a compatible endpoint that lacks it, with `count_endpoint=False`).
It refuses, with Anthropic's own error JSON and wording:
- a prompt over `window_tokens` (system + messages + tools, counted with o200k: not the gateway's count)
  with "prompt is too long: N tokens > M maximum", and prompt + max_tokens over it with the older
  "input length and `max_tokens` exceed context limit: X + Y > Z";
- a thinking block whose signature this upstream did not issue for its text (a changed or rebuilt block),
  and, with thinking enabled, an open tool round whose assistant turn does not start with its thinking;
- a `tool_use` without its `tool_result` in the next turn, and a `tool_result` without its `tool_use`.
Prompt caching as Anthropic counts it (`_cache`): every breakpoint's prefix (tools -> system -> messages) is
an entry; `cache_read_input_tokens` is the longest prefix of the request an earlier request marked,
`cache_creation_input_tokens` the rest up to the last breakpoint; `cache_log` keeps them per answer.
(Anthropic's minimum cacheable length and its 20-block lookback are not modelled.)
Faults ("overloaded" 529, "ratelimit" 429, "too_large" 413, "too_long": the window error quoting twice the
prompt's count (a provider that counts more than the gateway does), "error_event" mid-stream, "echo": the
answer's thinking, text and tool input carry the last user turn's text, and the base's "drip" / "cut" /
"garbage") script the next answer.
"""
from __future__ import annotations

import hashlib
import json
from http.server import BaseHTTPRequestHandler
from typing import Any

from flows.engine import FormatError, make_extractive, request_tokens, text_tokens
from tests.gateway.upstream_base import ScriptedUpstream, sign
from tests.gateway.wire_events import anthropic_events

MODEL = "claude-scripted-1"
COUNT_MODEL = "gpt-4o"  # o200k: a provider's tokenizer is never exactly the gateway's estimate
SUMMARY_MARKS = ("<summary>", "**summarized content:**", "execute_task_and_return_summary")
FAULT_STATUS = {"overloaded": (529, "overloaded_error", "Overloaded"),
                "ratelimit": (429, "rate_limit_error", "Number of request tokens has exceeded your per-minute "
                                                       "rate limit"),
                "too_large": (413, "request_too_large", "Request exceeds the maximum size")}


def _blocks(content: Any) -> list[dict[str, Any]]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])


def rule_broken(body: dict[str, Any]) -> str | None:
    """Anthropic's message for the first rule the request breaks, None when it keeps them all."""
    turns = body.get("messages") or []
    issued: list[str] = []
    for i, turn in enumerate(turns):
        blocks = _blocks(turn.get("content"))
        if turn.get("role") == "user":
            for j, block in enumerate(blocks):
                if block.get("type") == "tool_result" and block.get("tool_use_id") not in issued:
                    return (f"messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: "
                            f"{block.get('tool_use_id')}. Each `tool_result` block must have a corresponding "
                            "`tool_use` block in the previous message.")
        issued = [b["id"] for b in blocks if b.get("type") == "tool_use"] if turn.get("role") == "assistant" else []
        for j, block in enumerate(blocks):
            if block.get("type") == "thinking" and block.get("signature") != sign(str(block.get("thinking"))):
                return f"messages.{i}.content.{j}: Invalid `signature` in `thinking` block"
        answered = {b.get("tool_use_id") for b in _blocks(turns[i + 1].get("content"))} if i + 1 < len(turns) else None
        missing = [u for u in issued if answered is not None and u not in answered]
        if missing:
            return (f"messages.{i + 1}: `tool_use` ids were found without `tool_result` blocks immediately after: "
                    f"{', '.join(missing)}. Each `tool_use` block must have a corresponding `tool_result` block "
                    "in the next message.")
    return _thinking_missing(body, turns)


def _thinking_missing(body: dict[str, Any], turns: list[dict[str, Any]]) -> str | None:
    if (body.get("thinking") or {}).get("type") not in ("enabled", "adaptive") or len(turns) < 2:
        return None
    i, last = len(turns) - 2, _blocks(turns[-2].get("content"))
    if turns[i].get("role") != "assistant" or not any(b.get("type") == "tool_use" for b in last):
        return None
    if last[0].get("type") in ("thinking", "redacted_thinking"):
        return None
    return (f"messages.{i}.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
            f"`{last[0].get('type')}`. When `thinking` is enabled, a final `assistant` message must start with a "
            "thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks).")


def _echoed(body: dict[str, Any], turn: int) -> list[dict[str, Any]]:
    """An answer whose thinking, text and tool call carry the last user turn's text (hostile input coming back)."""
    said = " ".join(str(b.get("text") or b.get("content") or "") for b in _blocks(body["messages"][-1]["content"]))
    thought = f"Step {turn} thinks about {said}"
    return [{"type": "thinking", "thinking": thought, "signature": sign(thought)},
            {"type": "text", "text": f"Step {turn} says {said}"},
            {"type": "tool_use", "id": f"toolu_echo_{turn:04d}", "name": "terminal", "input": {"cmd": f"echo {said}"}}]


def _cache_sequence(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The cacheable blocks in the order the cache sees them: tools, system, then every message block."""
    system = body.get("system")
    blocks = list(body.get("tools") or []) + (_blocks(system) if system else [])
    return blocks + [b for turn in body.get("messages") or [] for b in _blocks(turn.get("content"))]


def _summary_prefix(turns: list[dict[str, Any]]) -> str:
    """The turns up to the first one carrying a summary (the gateway's or PentAGI's forms), as JSON; "" when none:
    requests with the same one were sent between the same two compactions."""
    for i, turn in enumerate(turns):
        if any(mark in json.dumps(turn.get("content")) for mark in SUMMARY_MARKS):
            return json.dumps(turns[:i + 1], sort_keys=True)
    return ""


class AnthropicUpstream(ScriptedUpstream):
    def __init__(self, window_tokens: int = 30_000, api_key: str | None = None, *, count_endpoint: bool = True) -> None:
        super().__init__(window_tokens=window_tokens, api_key=api_key)
        self.count_endpoint = count_endpoint
        self.url = f"http://127.0.0.1:{self.port}"  # Anthropic clients append /v1/messages themselves
        self.cached: set[str] = set()
        self.block_tokens: dict[str, int] = {}
        self.cache_log: list[dict[str, Any]] = []  # per answer: its cache counts and the summary it began with
        self.turn = 0

    def error_body(self, status: int, kind: str, message: str, **extra: Any) -> dict[str, Any]:
        return {"type": "error", "error": {"type": kind, "message": message}, "request_id": f"req_{self.turn:04d}"}

    def handle(self, handler: BaseHTTPRequestHandler, method: str, path: str, body: Any) -> None:
        route = path.split("?", 1)[0]
        routes = ("/v1/messages", "/v1/messages/count_tokens") if self.count_endpoint else ("/v1/messages",)
        if method != "POST" or route not in routes:
            return self.send(handler, 404, self.error_body(404, "not_found_error", f"no route {method} {route}"))
        if self.api_key is not None and self.key_of(handler) != self.api_key:
            return self.send(handler, 401, self.error_body(401, "authentication_error", "invalid x-api-key"))
        broken = rule_broken(body) if isinstance(body, dict) else "the body must be a JSON object"
        try:
            tokens = None if broken else request_tokens(body, "anthropic", model=COUNT_MODEL)
        except FormatError as exc:
            broken = str(exc)
        if broken or tokens is None:
            return self.send(handler, 400, self.error_body(400, "invalid_request_error", str(broken)))
        if route.endswith("count_tokens"):
            return self.send(handler, 200, {"input_tokens": tokens.prompt})
        self._answer(handler, body, tokens.prompt, tokens.max_output)

    def _answer(self, handler: BaseHTTPRequestHandler, body: dict[str, Any], prompt: int, max_tokens: int) -> None:
        fault = self.next_fault()
        if fault in FAULT_STATUS:
            status, kind, message = FAULT_STATUS[fault]
            return self.send(handler, status, self.error_body(status, kind, message))
        if prompt > self.window_tokens or fault == "too_long":
            quoted = max(2 * prompt, self.window_tokens + 1) if fault == "too_long" else prompt
            return self.send(handler, 400, self.error_body(400, "invalid_request_error", (
                f"prompt is too long: {quoted} tokens > {self.window_tokens} maximum")))
        if prompt + max_tokens > self.window_tokens:
            return self.send(handler, 400, self.error_body(400, "invalid_request_error", (
                f"input length and `max_tokens` exceed context limit: {prompt} + {max_tokens} > "
                f"{self.window_tokens}, decrease input length or `max_tokens` and try again")))
        with self.lock:
            self.turn += 1
            turn = self.turn
        message = self._message(body, turn, prompt)
        if fault == "echo":
            message["content"] = _echoed(body, turn)
            message["stop_reason"] = "tool_use"
        if not body.get("stream"):
            if fault == "garbage":  # a 200 whose body is no message: a proxy's error page
                return self.send(handler, 200, b"<html><body>502 Bad Gateway</body></html>")
            return self.send(handler, 200, message, {"request-id": f"req_{turn:04d}"})
        events = anthropic_events(message)
        if fault == "error_event":
            events = [*events[:3], {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}]
        self.stream(handler, events, fault=fault, terminal=lambda e: e["type"] == "message_stop")

    def _message(self, body: dict[str, Any], turn: int, prompt: int) -> dict[str, Any]:
        last = _blocks((body["messages"] or [{}])[-1].get("content"))
        blocks: list[dict[str, Any]] = []
        if (body.get("thinking") or {}).get("type") in ("enabled", "adaptive"):
            thought = f"Step {turn}: pick the next port to scan."
            blocks.append({"type": "thinking", "thinking": thought, "signature": sign(thought)})
        tools = body.get("tools") or []
        if tools and not any(b.get("type") == "tool_result" for b in last):
            blocks.append({"type": "tool_use", "id": f"toolu_{self.port}_{turn:04d}", "name": tools[0]["name"],
                           "input": {"cmd": f"nmap -p {turn} 10.10.5.23"}})
        elif tools:
            blocks.append({"type": "text", "text": f"Port scan step {turn} done: see the output above."})
        else:  # the product's own summary calls: a faithful summary, so its identifier audit passes
            prompt_text = "\n".join(str(b.get("text", "")) for t in body["messages"] for b in _blocks(t["content"]))
            blocks.append({"type": "text", "text": make_extractive()(prompt_text)})
        read, written = self._cache(body)
        usage = {"input_tokens": max(prompt - read - written, 0), "output_tokens": 12 + turn % 5,
                 "cache_creation_input_tokens": written, "cache_read_input_tokens": read}
        with self.lock:
            self.cache_log.append({"read": read, "written": written, "input": usage["input_tokens"],
                                   "summary": _summary_prefix(body["messages"])})
        return {"id": f"msg_{self.port}_{turn:04d}", "type": "message", "role": "assistant",
                "model": body.get("model") or MODEL, "content": blocks,
                "stop_reason": "tool_use" if blocks[-1]["type"] == "tool_use" else "end_turn", "stop_sequence": None,
                "usage": usage}

    def _cache(self, body: dict[str, Any]) -> tuple[int, int]:
        """(tokens read from the cache, tokens written to it), as Anthropic's prompt caching counts them: each
        breakpoint's prefix (tools -> system -> messages, up to the marked block) is a cache entry; the read is
        the longest prefix of this request that an earlier request marked, the write everything from there to
        this request's last breakpoint (a new entry per breakpoint)."""
        sequence = _cache_sequence(body)
        marks = [i for i, b in enumerate(sequence) if isinstance(b, dict) and "cache_control" in b]
        if body.get("cache_control") and sequence:
            marks.append(len(sequence) - 1)  # automatic caching: the breakpoint on the last block
        if not marks:
            return 0, 0
        digest, digests, sizes = hashlib.sha256(), [], []
        for block in sequence[:max(marks) + 1]:
            text = json.dumps({k: v for k, v in block.items() if k != "cache_control"}, sort_keys=True)
            digest.update(text.encode())
            digests.append(digest.hexdigest())
            sizes.append(self._block_tokens(block, text))
        with self.lock:
            hit = max((i + 1 for i, d in enumerate(digests) if d in self.cached), default=0)
            self.cached.update(digests[i] for i in marks)
        return sum(sizes[:hit]), sum(sizes[hit:])

    def _block_tokens(self, block: dict[str, Any], text: str) -> int:
        """A block's tokens: its text (or thinking, a tool's name and input, a result's content), else its JSON."""
        found = self.block_tokens.get(text)
        if found is None:
            payload = block.get("text", block.get("thinking"))
            if block.get("type") == "tool_use":
                payload = f"{block.get('name')} {json.dumps(block.get('input'))}"
            elif block.get("type") == "tool_result":
                payload = json.dumps(block.get("content"))
            found = text_tokens(payload if isinstance(payload, str) else text, model=COUNT_MODEL)
            self.block_tokens[text] = found
        return found
