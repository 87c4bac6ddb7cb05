"""The OpenAI Chat Completions wire format: parse a request body, build OpenAI error JSON; the parsed request
every wire format shares (`WireRequest`) and the gateway's error (`GatewayError`).

Only what the gateway needs is interpreted (`model`, `messages`, `stream`, `stream_options`); every other field
(tools, tool_choice, response_format, sampling parameters, vendor extensions) is passed through untouched.
The other wire formats parse into the same `WireRequest` (see `flows/gateway/protocols/`).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from flows.core import JsonBodyError, json_body, plain_text_problem
from flows.gateway.prefixes import HistoryMemo, message_digest

__all__ = ["check_model", "json_object", "MAX_BODY_BYTES", "ORIGINAL_ROLE", "GatewayError", "WireRequest",
           "ChatRequest", "parse_chat_request", "error_body", "storable", "wire_message", "with_model",
           "openai_upstream_error", "unknown_fields", "AgentFields"]

MAX_BODY_BYTES = 64 * 1024 * 1024
MAX_MODEL_CHARS = 200  # GatewayCall.model
_JSON_CODES = {"too_deep": "invalid_json", "invalid_text": "invalid_text"}
_HISTORIES = HistoryMemo()  # a resend converts and hashes only the messages it adds
_KEEP_KEYS = ("role", "content", "tool_calls", "tool_call_id", "name", "reasoning")
INSTRUCTION_ROLES = ("system", "developer")
ORIGINAL_ROLE = "original_role"  # stored on a mid-conversation system/developer message (see `storable`)


class GatewayError(Exception):
    """An error the agent gets as OpenAI error JSON with `status`."""

    def __init__(self, status: int, message: str, *, type_: str = "invalid_request_error", code: str | None = None,
                 body: bytes | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.type, self.code = status, message, type_, code
        self.body = body  # an upstream's own error body, passed through as it came
        self.headers: dict[str, str] = {}  # X-Chain-Id / X-Flow-Id once the request is threaded

    def payload(self) -> bytes:
        return self.body if self.body is not None else error_body(self.message, self.type, self.code)


def error_body(message: str, type_: str = "invalid_request_error", code: str | None = None) -> bytes:
    return json.dumps({"error": {"message": message, "type": type_, "code": code, "param": None}}).encode()


@dataclass
class WireRequest:
    """One agent request in any wire format, read into what the gateway needs; `body`/`raw` keep the rest."""

    body: dict[str, Any]
    raw: bytes
    model: str
    messages: list[dict[str, Any]]  # storable form (see `storable`), the wire's own blocks in an extension key
    stream: bool
    hashes: list[str]  # prefix_hashes(messages), for threading
    forward: dict[str, str] = field(default_factory=dict)  # request headers the upstream gets as they came
    query: str = ""  # the request's query string, passed on to the upstream (Anthropic's `?beta=true`)

    @property
    def wants_usage(self) -> bool:
        options = self.body.get("stream_options")
        return isinstance(options, dict) and options.get("include_usage") is True


ChatRequest = WireRequest  # the name before the other wire formats came


def storable(message: Any, index: int) -> dict[str, Any]:
    """The message as the chain stores it: nulls dropped, `developer` read as `system`.

    SDKs echo assistant messages back with extra nulls (`refusal`, `audio`, `function_call`): dropped. Any other
    field the chain has no column for (`cache_control`, vendor keys such as `reasoning_content`) is kept as it
    came: it lands in `Message.extra` and export gives it back. Threading hashes only the known fields
    (`prefixes.normalised`), so such a field never makes a resend look like a rewritten history.

    A chain has one system message, its first (as PentAGI's do); a system or developer message later in a
    request (an instruction some frameworks insert mid-conversation) is stored as a user message carrying
    `original_role`. Observe mode forwards it as the agent sent it; in manage mode it is part of the view like
    any user message (PentAGI's view merges consecutive user messages), so it goes upstream as user text.
    """
    if not isinstance(message, dict):
        raise GatewayError(400, f"messages[{index}] must be an object", code="invalid_message")
    out = {k: v for k, v in message.items() if v is not None and k != ORIGINAL_ROLE}
    if out.get("role") in INSTRUCTION_ROLES:
        if index:
            out[ORIGINAL_ROLE] = out["role"]
            out["role"] = "user"
        else:
            out["role"] = "system"
    if out.get("tool_calls") == []:
        del out["tool_calls"]
    if out.get("role") == "assistant" and "content" not in out:
        out["content"] = None
    out.setdefault("content", None)
    return out


def unknown_fields(message: dict[str, Any]) -> dict[str, Any]:
    """The message's fields the chain has no column for (`cache_control`, `reasoning_content`, ...)."""
    return {k: v for k, v in message.items() if k not in _KEEP_KEYS and k != ORIGINAL_ROLE}


class AgentFields:
    """The unknown fields the agent sent on each message of this request, found again by message identity.

    A fitted view is rebuilt from stored messages; a view message equal to one the agent sent (same role,
    content, calls, call id and name) goes upstream with that message's unknown fields as sent this time (a
    `cache_control` breakpoint the agent moved moves too; a stored answer's vendor keys the agent did not echo
    stay out). A message the engine changed or made (a truncated output, a summary) has none. Identical
    messages are matched from the end, since a view keeps the tail of a history and summarizes its head."""

    def __init__(self, messages: list[dict[str, Any]]) -> None:
        self._by_digest: dict[bytes, list[dict[str, Any]]] = {}
        if any(unknown_fields(m) for m in messages):  # else nothing to look up: no digests computed
            for message in messages:
                self._by_digest.setdefault(message_digest(message), []).append(unknown_fields(message))

    def wire_messages(self, view: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """`view` as the upstream takes it (see wire_message), in order."""
        return [wire_message(m, self._take(m)) for m in reversed(view)][::-1]

    def _take(self, message: dict[str, Any]) -> dict[str, Any]:
        if not self._by_digest:
            return {}
        same = self._by_digest.get(message_digest(message))
        return same.pop() if same else {}


def wire_message(message: dict[str, Any], sent: dict[str, Any] | None = None) -> dict[str, Any]:
    """A stored message as the upstream takes it: its known fields without our own (PentAGI's `reasoning`,
    `original_role`: strict endpoints refuse unknown message fields), plus `sent`, the unknown fields the agent
    put on this very message in this request (AgentFields)."""
    out = {k: v for k, v in message.items() if k in _KEEP_KEYS and k != "reasoning"}
    return {**out, **(sent or {})}


_MODEL_MEMBER = re.compile(rb'"model"\s*:\s*("(?:[^"\\]|\\.)*")')


def with_model(raw: bytes, old: str, new: str) -> bytes | None:
    """`raw` with its top-level model `old` replaced by `new`, every other byte as it came; None when that
    cannot be done safely (then the caller re-serializes). Safe: the member is the document's only "model"
    key (a key token cannot occur inside a JSON string, whose quotes are escaped) and its value decodes to
    `old`, so it is the top-level one the request was parsed with."""
    found = list(_MODEL_MEMBER.finditer(raw))
    try:
        if len(found) != 1 or json.loads(found[0].group(1)) != old:
            return None
    except ValueError:
        return None
    start, end = found[0].span(1)
    return raw[:start] + json.dumps(new, ensure_ascii=False).encode("utf-8") + raw[end:]


def json_object(raw: bytes) -> dict[str, Any]:
    """A request body as a JSON object; huge integers, deep nesting and lone surrogates are a 400, never a 500."""
    try:
        body = json_body(raw)
    except JsonBodyError as exc:
        raise GatewayError(400, str(exc), code=_JSON_CODES.get(exc.code, "invalid_json")) from None
    if not isinstance(body, dict):
        raise GatewayError(400, "the body must be a JSON object", code="invalid_json")
    return body


def check_model(model: Any) -> str:
    """`model` as a string the call record's column can hold (400 `invalid_model` otherwise)."""
    if not isinstance(model, str) or not model.strip():
        raise GatewayError(400, "'model' must be a non-empty string", code="invalid_model")
    problem = plain_text_problem(model) or (
        f"is over {MAX_MODEL_CHARS} characters" if len(model.strip()) > MAX_MODEL_CHARS else None)
    if problem is not None:
        raise GatewayError(400, f"'model' {problem}", code="invalid_model")
    return model


def parse_chat_request(raw: bytes) -> WireRequest:
    if len(raw) > MAX_BODY_BYTES:
        raise GatewayError(413, f"request body over {MAX_BODY_BYTES} bytes", code="request_too_large")
    body = json_object(raw)
    model, messages, stream = check_model(body.get("model")), body.get("messages"), body.get("stream", False)
    if not isinstance(messages, list) or not messages:
        raise GatewayError(400, "'messages' must be a non-empty list", code="invalid_messages")
    if not isinstance(stream, bool):
        raise GatewayError(400, "'stream' must be a boolean", code="invalid_stream")
    if "stream_options" in body and body["stream_options"] is not None and not isinstance(body["stream_options"],
                                                                                           dict):
        raise GatewayError(400, "'stream_options' must be an object", code="invalid_stream_options")
    stored, hashes = _HISTORIES.derive(messages, storable)
    return WireRequest(body=body, raw=raw, model=model.strip(), stream=stream, messages=stored, hashes=hashes)


def openai_upstream_error(status: int, raw: bytes) -> GatewayError:
    """An OpenAI-style upstream's error as it came when it is OpenAI error JSON, else wrapped in one; same status
    (Chat Completions and Responses share the error shape)."""
    try:
        parsed = json.loads(raw)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and isinstance(parsed.get("error"), dict):
        return GatewayError(status, str(parsed["error"].get("message", "")), type_="upstream_error", body=raw)
    text = raw.decode("utf-8", "replace")[:2000] or f"HTTP {status}"
    return GatewayError(status, f"upstream error: {text}", type_="upstream_error", code="upstream_error")
