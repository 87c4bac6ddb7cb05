"""The API's OpenAPI 3.1 document, served at /api/openapi.json (public: it describes, it reveals no data)."""
from __future__ import annotations

from typing import Any

from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from flows.api.errors import error_response
from flows.api.views_chains import DEFAULT_PAGE_MESSAGES, MAX_PAGE_MESSAGES, MAX_SEQ
from flows.core import MAX_INSTRUCTIONS_CHARS
from flows.engine import FORMATS
from flows.models import AGENT_TYPES

__all__ = ["SCHEMA", "schema_view"]


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: dict[str, Any], description: str = "OK") -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _errors(*codes: int) -> dict[str, Any]:
    text = {400: "invalid input", 401: "not authenticated", 403: "forbidden", 404: "not found (or not yours)",
            413: "payload too large", 415: "not JSON", 409: "chain segment archived, or nothing to compact",
            422: "the compaction would fail (the reason says why)",
            503: "the task broker did not answer (nothing queued)"}
    return {str(c): _json(_ref("Error"), text[c]) for c in codes}


def _op(summary: str, ok: dict[str, Any], *, status: int = 200, body: dict[str, Any] | None = None,
        errors: tuple[int, ...] = (401, 404), params: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    op: dict[str, Any] = {"summary": summary, "responses": {str(status): ok, **_errors(*errors)}}
    if body is not None:
        op["requestBody"] = {"required": True, "content": {"application/json": {"schema": body}}}
    if params:
        op["parameters"] = params
    return op


def _with_response(op: dict[str, Any], status: int, answer: dict[str, Any]) -> dict[str, Any]:
    """`op` with one more success answer (an endpoint that answers 200 or 201 depending on its body)."""
    return {**op, "responses": {str(status): answer, **op["responses"]}}


def _path_id(name: str) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": {"type": "integer"}}


def _query(name: str, schema: dict[str, Any], description: str = "") -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "schema": schema, "description": description}


OBJ = {"type": "object"}
MESSAGE = {
    "type": "object", "required": ["role"], "additionalProperties": True,
    "properties": {
        "role": {"enum": ["system", "user", "assistant", "tool"]},
        "content": {"type": ["string", "null", "array"]},
        "tool_calls": {"type": "array", "items": {"type": "object", "properties": {
            "id": {"type": "string"}, "type": {"const": "function"},
            "function": {"type": "object", "properties": {"name": {"type": "string"},
                                                          "arguments": {"type": "string"}}}}}},
        "tool_call_id": {"type": "string"}, "name": {"type": "string"},
        "reasoning": {"type": ["object", "null"]},
    },
}
SCHEMAS: dict[str, Any] = {
    "Error": {"type": "object", "required": ["error", "detail"], "properties": {
        "error": {"type": "string"}, "detail": {}, "index": {"type": "integer"}, "field": {"type": "string"}}},
    "Message": MESSAGE,
    "StoredMessage": {"allOf": [_ref("Message"), {"type": "object", "properties": {
        "seq": {"type": "integer"}, "byte_size": {"type": "integer"}, "token_count": {"type": ["integer", "null"]}}}]},
    "Agent": {"type": "object", "properties": {
        "id": {"type": "integer"}, "flow_id": {"type": "integer"}, "agent_type": {"enum": AGENT_TYPES},
        "profile": {"enum": ["agent", "assistant"]}, "chain_id": {"type": ["integer", "null"]}}},
    "Flow": {"type": "object", "properties": {
        "id": {"type": "integer"}, "title": {"type": "string"}, "status": {"type": "string"},
        "owner": {"type": "string"}, "model_name": {"type": "string"},
        "session_id": {"type": "string", "description": "the gateway session whose calls the flow holds; '' = none"},
        "agents": {"type": "array", "items": _ref("Agent")}}},
    "Section": {"type": "object", "properties": {
        "index": {"type": "integer"}, "size": {"type": "integer"}, "header": OBJ,
        "pairs": {"type": "array", "items": {"type": "object", "properties": {
            "kind": {"enum": ["completion", "request_response", "summarization"]}, "size": {"type": "integer"},
            "summary": {"type": "boolean"}}}}}},
    "Chain": {"type": "object", "required": ["id", "raw", "has_more", "next_after_seq", "stats"], "properties": {
        "id": {"type": "integer"}, "raw": {"type": "array", "items": _ref("StoredMessage"),
                                           "description": "one page of raw messages, in seq order"},
        "has_more": {"type": "boolean"},
        "next_after_seq": {"type": ["integer", "null"], "description": "pass as after_seq for the next page"},
        "view": {"type": "array", "items": _ref("Message"),
                 "description": "a page of the view (limit messages from view_offset): on the first page (no "
                                "after_seq) and whenever view_offset is given"},
        "view_offset": {"type": "integer"}, "view_has_more": {"type": "boolean"},
        "next_view_offset": {"type": ["integer", "null"], "description": "pass as view_offset for the next page"},
        "sections": {"type": "array", "items": _ref("Section"),
                     "description": "the whole view's structure, with the view page at offset 0"},
        "stats": OBJ}},
    "AppendRequest": {"type": "object", "required": ["messages"], "properties": {
        "messages": {"type": "array", "items": _ref("Message"), "minItems": 1, "maxItems": 1000}}},
    "AppendResult": {"type": "object", "properties": {
        "appended": {"type": "integer"}, "last_seq": {"type": "integer"}, "turn_completed": {"type": "boolean"},
        "summarization": {"type": "string", "description": "queued | coalesced (a summarization of this chain "
                          "already waits in the queue; it loads the newest state, so it covers this turn) | none (no "
                          "turn ended) | pending (not committed yet) | not queued: broker unreachable (queued again "
                          "by the sweep once it answers)"}}},
    "SummaryEvent": {"type": "object", "properties": {
        "id": {"type": "integer"}, "trigger": {"type": "string"}, "outcome": {"type": "string"},
        "calls": {"type": "integer", "description": "summarize calls, the offline extractive summarizer's included"},
        "model_calls": {"type": "integer", "description": "of those, the calls that went to a model"},
        "summarizer_model": {"type": ["string", "null"], "description": "the model they went to (null: none)"},
        "model": {"type": "string", "description": "the flow's model, whose tokenizer counted the tokens"}}},
    "CompactionDryRun": {"type": "object", "properties": {
        "preview_id": {"type": "integer", "description": "send it back as preview_id to apply this result"},
        "outcome": {"const": "ok"}, "reason": {"type": "string"}, "instructions": {"type": "string"},
        "summary_text": {"type": "string"},
        "replaces_seqs": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}},
                          "description": "raw seq ranges [first, last] the summary replaces"},
        "replaced": {"type": "array", "items": OBJ}, "kept_messages": {"type": "integer"},
        "tokens_before": {"type": "integer"}, "tokens_after": {"type": "integer"},
        "bytes_before": {"type": "integer"}, "bytes_after": {"type": "integer"},
        "retention": {"type": ["object", "null"]}, "calls": {"type": "integer"}, "cost_usd": {"type": "number"},
        "expires_in_seconds": {"type": "integer"}}},
    "Settings": {"type": "object", "properties": {
        "profile": {"type": "string"}, "flow_id": {"type": ["integer", "null"]}, "values": OBJ,
        "fields": {"type": "array", "items": OBJ}, "scope": {"enum": ["defaults", "flow"]}}},
    "ImportRequest": {"type": "object", "required": ["data"], "properties": {
        "format": {"enum": list(FORMATS)}, "data": {"description": "messages (list/object) or file text"},
        "title": {"type": "string"}, "agent_type": {"enum": AGENT_TYPES}, "profile": {"enum": ["agent", "assistant"]}}},
    "ImportResult": {"type": "object", "properties": {
        "flow_id": {"type": "integer"}, "agent_id": {"type": "integer"}, "chain_id": {"type": "integer"},
        "messages": {"type": "integer"}}},
}
FLOW, CHAIN = [_path_id("flow_id")], [_path_id("chain_id")]
PAGE = [_query("after_seq", {"type": "integer", "minimum": 0, "maximum": MAX_SEQ}, "raw messages after this seq"),
        _query("limit", {"type": "integer", "minimum": 1, "maximum": MAX_PAGE_MESSAGES,
                         "default": DEFAULT_PAGE_MESSAGES}, "raw messages per page")]
PROFILE = [{"name": "profile", "in": "path", "required": True, "schema": {"enum": ["agent", "assistant"]}},
           _query("flow", {"type": "integer"}, "a flow's own settings instead of the defaults")]
UPLOAD_SCHEMA: dict[str, Any] = {"type": "object", "required": ["file"], "properties": {
    "file": {"type": "string", "contentMediaType": "application/octet-stream"}, "format": {"enum": list(FORMATS)}}}

PATHS: dict[str, Any] = {
    "/api/flows": {
        "get": _op("Flows you can see", _json({"type": "object", "properties": {
            "flows": {"type": "array", "items": _ref("Flow")}}}), errors=(401,)),
        "post": _op("Create a flow", _json(_ref("Flow"), "Created"), status=201, errors=(400, 401, 415),
                    body={"type": "object", "required": ["title"], "properties": {
                        "title": {"type": "string", "maxLength": 200}, "model_name": {"type": "string"}}}),
    },
    "/api/flows/{flow_id}": {"get": _op("A flow with its agents", _json(_ref("Flow")), params=FLOW)},
    "/api/flows/{flow_id}/agents": {"post": _op(
        "Add an agent (and its active chain)", _json(_ref("Agent"), "Created"), status=201, params=FLOW,
        errors=(400, 401, 404, 415), body={"type": "object", "required": ["agent_type"], "properties": {
            "agent_type": {"enum": AGENT_TYPES}, "profile": {"enum": ["agent", "assistant"]}}})},
    "/api/flows/{flow_id}/export": {"get": _op(
        "Export a chain of the flow", {"description": "the chain file", "content": {
            "application/json": {"schema": {"type": "array"}}, "application/x-ndjson": {"schema": {"type": "string"}}}},
        errors=(400, 401, 404), params=FLOW + [_query("format", {"enum": list(FORMATS)}),
                                               _query("chain", {"type": "integer"})])},
    "/api/chains/{chain_id}": {"get": _op(
        "A page of the raw chain; the first page (no after_seq) also has the current view and its sections",
        _json(_ref("Chain")), errors=(400, 401, 404), params=CHAIN + PAGE + [_query(
            "view_offset", {"type": "integer", "minimum": 0, "maximum": MAX_SEQ},
            "the view's page from this message index (limit messages)")])},
    "/api/chains/{chain_id}/messages": {
        "post": _op("Append a batch of messages atomically", _json(_ref("AppendResult"), "Created"), status=201,
                    body=_ref("AppendRequest"), params=CHAIN, errors=(400, 401, 404, 409, 413, 415)),
        "get": _op("Raw messages after a seq (catch-up)", _json({"type": "object", "properties": {
            "messages": {"type": "array", "items": _ref("StoredMessage")}, "last_seq": {"type": "integer"},
            "has_more": {"type": "boolean"}}}), errors=(400, 401, 404), params=CHAIN + PAGE),
    },
    "/api/chains/{chain_id}/events": {"get": _op("Summarization and compaction events", _json({
        "type": "object", "properties": {"events": {"type": "array", "items": _ref("SummaryEvent")}}}),
        params=CHAIN)},
    "/api/chains/{chain_id}/compact": {"post": _with_response(_op(
        "Compact now (manual), with optional focus instructions; dry_run: what it would produce, nothing written",
        _json(_ref("SummaryEvent"), "Created"), status=201,
        params=CHAIN, errors=(400, 401, 404, 409, 415, 422, 503), body={"type": "object", "properties": {
            "instructions": {"type": "string", "maxLength": MAX_INSTRUCTIONS_CHARS},
            "dry_run": {"type": "boolean", "description": "compute and return the result (200), write nothing"},
            "preview_id": {"type": "integer", "description": "apply this dry run's result if the chain has not "
                                                             "moved since (else recomputed)"}}}),
        200, _json(_ref("CompactionDryRun"), "dry_run: what the compaction would produce (nothing written)"))},
    "/api/chains/{chain_id}/preview": {"post": _op(
        "The view these settings would give (nothing saved)", _json(OBJ), params=CHAIN, errors=(400, 401, 404, 415),
        body={"type": "object", "properties": {"settings": OBJ}})},
    "/api/import": {"post": {**_op("Import a transcript as a new flow", _json(_ref("ImportResult"), "Created"),
                                   status=201, errors=(400, 401, 413, 415)),
                             "requestBody": {"required": True, "content": {
                                 "application/json": {"schema": _ref("ImportRequest")},
                                 "multipart/form-data": {"schema": UPLOAD_SCHEMA}}}}},
    "/api/settings/{profile}": {
        "get": _op("Summarizer settings (defaults, or a flow's own)", _json(_ref("Settings")), params=PROFILE,
                   errors=(400, 401, 404)),  # 400: a ?flow= that is not an id
        "put": _op("Change settings (defaults: staff only)", _json(_ref("Settings")), params=PROFILE,
                   errors=(400, 401, 403, 404, 415), body={"type": "object", "properties": {"settings": OBJ}}),
    },
}
SCHEMA: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "pentagi-web API", "version": "1.0",
             "description": "Agents write their message chains; the dashboard summarizes and fits them. "
                            "Errors are {\"error\": code, \"detail\": ...}. A trailing slash is optional."},
    "paths": PATHS,
    "components": {"schemas": SCHEMAS, "securitySchemes": {
        "bearer": {"type": "http", "scheme": "bearer"},
        "session": {"type": "apiKey", "in": "cookie", "name": "sessionid"}}},
    "security": [{"bearer": []}, {"session": []}],
}


@csrf_exempt  # else Django's CSRF check answers a POST with its HTML 403 before the JSON 405 below
def schema_view(request: HttpRequest) -> JsonResponse:
    if request.method not in ("GET", "HEAD"):
        resp = error_response(405, "method_not_allowed", f"{request.method} is not allowed here")
        resp["Allow"] = "GET, HEAD"
        return resp
    return JsonResponse(SCHEMA)
