"""A scripted OpenAI Responses upstream on loopback that enforces the API's rules like the real one.

`POST /v1/responses` answers a function-calling 'model' (a `function_call` per user request, a message once
its output is in, a reasoning item first when the request sets `reasoning`, its `encrypted_content` only
with `include: ["reasoning.encrypted_content"]`); JSON, or SSE events when `stream` is set. Responses are
stored unless `store` is false: `previous_response_id` continues one (its input and output come first), and
`GET /v1/responses/{id}` reads it back. It refuses, with OpenAI's error JSON:
- a prompt (instructions + input + tools, counted with o200k) plus `max_output_tokens` over `window_tokens`
  with `context_length_exceeded`;
- a reasoning item whose `encrypted_content` this upstream did not seal (changed in any byte);
- a `function_call_output` whose `call_id` no function call in the conversation issued;
- an unknown `previous_response_id` (404).
Faults ("ratelimit" 429, "server_error" 500, "failed_overflow": the overflow inside a streamed
`response.failed`, and the base's "drip" / "cut" / "garbage") script the next answer.
"""
from __future__ import annotations

import base64
import json
from http.server import BaseHTTPRequestHandler
from typing import Any

from flows.engine import FormatError, request_tokens
from tests.gateway.upstream_base import ScriptedUpstream, sign
from tests.gateway.wire_events import responses_events

COUNT_MODEL = "gpt-4o"
OVERFLOW = "Your input exceeds the context window of this model. Please adjust your input and try again."
FAULT_STATUS = {"ratelimit": (429, "requests", "rate_limit_exceeded", "Rate limit reached for gpt-5 in organization "
                              "org-scripted on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try "
                              "again in 20s."),
                "server_error": (500, "server_error", "server_error", "The server had an error processing your "
                                 "request.")}


def seal(text: str) -> str:
    """An opaque `encrypted_content` only this upstream can produce, holding the reasoning text."""
    payload = base64.b64encode(text.encode()).decode()
    return f"{payload}.{sign(payload)}"


def unsealed(blob: Any) -> bool:
    payload, _, mac = str(blob).rpartition(".")
    return not payload or sign(payload) != mac


def rule_broken(items: list[dict[str, Any]]) -> tuple[str, str] | None:
    """(code, message) for the first rule the conversation breaks, None when it keeps them all."""
    issued: set[str] = set()
    for item in items:
        kind = item.get("type")
        if kind in ("function_call", "custom_tool_call"):
            issued.add(str(item.get("call_id")))
        elif kind in ("function_call_output", "custom_tool_call_output") and item.get("call_id") not in issued:
            return "invalid_request_error", f"No tool call found for function call output with call_id " \
                                            f"{item.get('call_id')}."
        elif kind == "reasoning" and "encrypted_content" in item and unsealed(item["encrypted_content"]):
            return "invalid_encrypted_content", f"The encrypted content for item {item.get('id')} could not be " \
                                                "verified."
    return None


class ResponsesUpstream(ScriptedUpstream):
    def __init__(self, window_tokens: int = 30_000, api_key: str | None = None) -> None:
        super().__init__(window_tokens=window_tokens, api_key=api_key)
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.stored: dict[str, dict[str, Any]] = {}
        self.turn = 0

    def error_body(self, status: int, kind: str, message: str, **extra: Any) -> dict[str, Any]:
        return {"error": {"message": message, "type": kind, "param": extra.get("param"), "code": extra.get("code")}}

    def handle(self, handler: BaseHTTPRequestHandler, method: str, path: str, body: Any) -> None:
        route = path.split("?", 1)[0]
        if self.api_key is not None and self.key_of(handler) != self.api_key:
            return self.send(handler, 401, self.error_body(401, "invalid_request_error", "Incorrect API key provided",
                                                          code="invalid_api_key"))
        if method == "GET" and route.startswith("/v1/responses/") and route[14:] in self.stored:
            return self.send(handler, 200, self.stored[route[14:]]["response"])
        if method != "POST" or route != "/v1/responses" or not isinstance(body, dict):
            return self.send(handler, 404, self.error_body(404, "invalid_request_error", f"no route {method} {route}"))
        previous = body.get("previous_response_id")
        if previous is not None and previous not in self.stored:
            return self.send(handler, 404, self.error_body(
                404, "invalid_request_error", f"Previous response with id '{previous}' not found.",
                param="previous_response_id", code="previous_response_not_found"))
        items = self._conversation(body)
        broken = rule_broken(items)
        try:
            tokens = request_tokens({**body, "input": items}, "responses", model=COUNT_MODEL)
        except FormatError as exc:
            broken = broken or ("invalid_request_error", str(exc))
        if broken:
            return self.send(handler, 400, self.error_body(400, "invalid_request_error", broken[1], code=broken[0]))
        self._answer(handler, body, items, tokens.prompt, tokens.max_output)

    def _conversation(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """The whole input: a stored response's input and output first, then this request's input."""
        new = body.get("input", [])
        new = [{"role": "user", "content": new}] if isinstance(new, str) else list(new)
        previous = self.stored.get(body.get("previous_response_id") or "")
        return (previous["input"] + previous["response"]["output"] if previous else []) + new

    def _answer(self, handler: BaseHTTPRequestHandler, body: dict[str, Any], items: list[dict[str, Any]],
                prompt: int, max_output: int) -> None:
        fault = self.next_fault()
        if fault in FAULT_STATUS:
            status, kind, code, message = FAULT_STATUS[fault]
            return self.send(handler, status, self.error_body(status, kind, message, code=code))
        overflow = prompt + max_output > self.window_tokens
        if overflow and not (fault == "failed_overflow" and body.get("stream")):
            return self.send(handler, 400, self.error_body(400, "invalid_request_error", OVERFLOW, param="input",
                                                          code="context_length_exceeded"))
        with self.lock:
            self.turn += 1
            turn = self.turn
        response = self._response(body, items, turn, prompt)
        if overflow:  # the overflow reported inside the stream, as response.failed
            response.update(status="failed", output=[], usage=None,
                            error={"code": "context_length_exceeded", "message": OVERFLOW})
        elif body.get("store", True):
            self.stored[response["id"]] = {"input": items, "response": response}
        if not body.get("stream"):
            return self.send(handler, 200, response)
        terminal = "response.failed" if overflow else "response.completed"
        self.stream(handler, responses_events(response, terminal=terminal), fault=fault,
                    terminal=lambda e: e["type"] == terminal)

    def _response(self, body: dict[str, Any], items: list[dict[str, Any]], turn: int, prompt: int) -> dict[str, Any]:
        output: list[dict[str, Any]] = []
        tag = f"{self.port}_{turn:04d}"
        if body.get("reasoning"):
            thought = f"Step {turn}: pick the next port to scan."
            reasoning: dict[str, Any] = {"type": "reasoning", "id": f"rs_{tag}",
                                         "summary": [{"type": "summary_text", "text": thought}]}
            if "reasoning.encrypted_content" in (body.get("include") or []):
                reasoning["encrypted_content"] = seal(thought)
            output.append(reasoning)
        tools = [t for t in body.get("tools") or [] if t.get("type") == "function"]
        answered = bool(items) and items[-1].get("type") == "function_call_output"
        if tools and not answered:
            output.append({"type": "function_call", "id": f"fc_{tag}", "call_id": f"call_{tag}",
                           "name": tools[0]["name"], "arguments": json.dumps({"cmd": f"nmap -p {turn} 10.10.5.23"}),
                           "status": "completed"})
        else:
            output.append({"type": "message", "id": f"msg_{tag}", "role": "assistant", "status": "completed",
                           "content": [{"type": "output_text", "text": f"Port scan step {turn} done.",
                                        "annotations": []}]})
        return {"id": f"resp_{tag}", "object": "response", "created_at": 1756000000 + turn, "status": "completed",
                "model": body.get("model"), "output": output, "error": None, "incomplete_details": None,
                "instructions": body.get("instructions"), "previous_response_id": body.get("previous_response_id"),
                "parallel_tool_calls": True, "tool_choice": body.get("tool_choice", "auto"),
                "tools": body.get("tools") or [], "store": body.get("store", True),
                "usage": {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 20,
                          "output_tokens_details": {"reasoning_tokens": 8 if body.get("reasoning") else 0},
                          "total_tokens": prompt + 20}}
