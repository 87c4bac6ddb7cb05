"""Who is calling within a run: the session a call belongs to and the agent that makes it.

Any wire format uses it the same way: its view reads the request's headers with `call_headers(request)` (which
folds a `/s/<session>/v1/...` URL into them) and admission asks `call_identity(headers, messages)` once the
body is parsed into our messages. The session names the flow (one per owner and session); the agent type names
the agent of that flow whose chain the call continues.

Session headers, first found wins: `X-Session-Id` (ours), `Helicone-Session-Id` (Helicone's sessions),
`x-litellm-session-id` (LiteLLM's proxy), `Langfuse-Session-Id` (Langfuse's). A session in the URL is for
clients that can set only a base URL; it overrides the headers, the base URL being the deliberate setting.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest

from flows.gateway.agent_roles import recognise_agent_type
from flows.gateway.wire import GatewayError
from flows.models import AGENT_TYPES, SESSION_ID_CHARS

__all__ = ["SESSION_HEADERS", "URL_SESSION", "CallIdentity", "call_headers", "session_of", "agent_type_of",
           "call_identity"]

SESSION_HEADERS = ("X-Session-Id", "Helicone-Session-Id", "X-Litellm-Session-Id", "Langfuse-Session-Id")
URL_SESSION = re.compile(r"^/s/(?P<session>[^/]*)/v1/")
DEFAULT_AGENT_TYPE = AGENT_TYPES[0]


@dataclass(frozen=True)
class CallIdentity:
    session: str  # "" when the call names no session: today's one flow per new conversation
    agent_type: str


def call_headers(request: HttpRequest) -> dict[str, str]:
    """The request's headers, with a session in the URL (`/s/<session>/v1/...`) as its `X-Session-Id`."""
    headers = dict(request.headers)
    found = URL_SESSION.match(request.path_info)  # already percent-decoded, as every header value is plain
    if found is not None:
        for key in [k for k in headers if k.lower() == "x-session-id"]:
            del headers[key]
        headers["X-Session-Id"] = found["session"]
    return headers


def _header(headers: Mapping[str, str], name: str) -> str:
    wanted = name.lower()
    return next((value for key, value in headers.items() if key.lower() == wanted), "")


def session_of(headers: Mapping[str, str]) -> str:
    """The call's session id ("" for none); a 400 for one no flow should be named by."""
    for name in SESSION_HEADERS:
        value = _header(headers, name).strip()
        if not value:
            continue
        if len(value) > SESSION_ID_CHARS:
            raise GatewayError(400, f"{name} is {len(value)} characters; a session id has at most "
                                    f"{SESSION_ID_CHARS}", code="invalid_session_id")
        if not value.isprintable():
            raise GatewayError(400, f"{name} contains control characters", code="invalid_session_id")
        return value
    return ""


def agent_type_of(headers: Mapping[str, str], messages: Sequence[dict[str, Any]]) -> str:
    """`X-Agent-Type` when it names one of AGENT_TYPES, else the PentAGI agent the system prompt opens like,
    else the primary agent."""
    named = _header(headers, "X-Agent-Type").strip().lower()
    if named in AGENT_TYPES:
        return named
    return recognise_agent_type(messages) or DEFAULT_AGENT_TYPE


def call_identity(headers: Mapping[str, str], messages: Sequence[dict[str, Any]]) -> CallIdentity:
    return CallIdentity(session=session_of(headers), agent_type=agent_type_of(headers, messages))
