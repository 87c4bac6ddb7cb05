"""How the demo agent reaches its model: through the product's gateway, or straight into the chain.

`GatewayTurns` is the real path, the one every connected agent takes: each model call is an OpenAI
`POST /v1/chat/completions` to the running server with the agent's whole history, authenticated by an API token
and pinned to the demo chain (`X-Chain-Id`). The gateway threads the new messages into the chain, summarizes
and fits the view (manage mode), forwards it to the demo's scripted model (`flows.demo.upstream`) and appends
the answer, so the chain page shows the demo's calls and what was sent to the model.
`DirectTurns` writes the same messages through `chain_append` for a demo with no server to call
(`manage.py demo` alone).
"""
from __future__ import annotations

import json
import logging
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any, Protocol

from flows.demo.upstream import ANSWER_FIELD
from flows.ingest import chain_append
from flows.models import Chain

__all__ = ["DEMO_TOOLS", "Post", "ModelTurns", "DemoCallError", "GatewayTurns", "DirectTurns", "FirstCallFallback",
           "http_post"]

# The tools the demo agent calls, declared as a PentAGI agent declares them on every request: the gateway counts
# their tokens into the fit and the call page and the chain's context breakdown show them.
DEMO_TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {
        "name": "terminal", "description": "Run a shell command in the attacker container and return its output.",
        "parameters": {"type": "object", "required": ["input"], "properties": {
            "input": {"type": "string", "description": "the command line"},
            "cwd": {"type": "string", "description": "working directory"},
            "detach": {"type": "boolean", "description": "run in the background"},
            "timeout": {"type": "integer", "description": "seconds before the command is killed"}}}}},
    {"type": "function", "function": {
        "name": "browser", "description": "Fetch a web page and return it as markdown, or its links.",
        "parameters": {"type": "object", "required": ["url", "action"], "properties": {
            "url": {"type": "string"}, "action": {"type": "string", "enum": ["markdown", "links"]}}}}},
]


log = logging.getLogger(__name__)

Message = dict[str, Any]
Post = Callable[[str, bytes, dict[str, str]], tuple[int, dict[str, str], bytes]]  # (status, headers, body)
CALL_TIMEOUT_SECONDS = 300.0  # a manage-mode call may summarize and fit before it goes upstream
SERVER_WAIT_SECONDS = 60.0  # `manage.py run` starts the demo just before its server listens


class ModelTurns(Protocol):
    chain_id: int

    def call(self, history: list[Message], answer: Message) -> Message:
        """Send `history` to the model, whose scripted reply is `answer`; return the reply as received."""
        ...


class DemoCallError(RuntimeError):
    """The gateway refused or failed a demo call (its OpenAI error message is the text)."""


def http_post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    """POST with the standard library; a refused connection is retried while the server is still starting."""
    deadline = time.monotonic() + SERVER_WAIT_SECONDS
    while True:
        request = urllib.request.Request(url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=CALL_TIMEOUT_SECONDS) as response:
                return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read()
        except urllib.error.HTTPError as exc:
            return exc.code, {k.lower(): v for k, v in exc.headers.items()}, exc.read()
        except urllib.error.URLError as exc:
            if not isinstance(exc.reason, ConnectionRefusedError) or time.monotonic() > deadline:
                raise
            time.sleep(0.25)


class GatewayTurns:
    """Model calls through `{server}/v1/chat/completions`, answered by the scripted upstream behind it."""

    def __init__(self, *, server: str, token: str, chain_id: int, model: str, post: Post = http_post) -> None:
        self.url = server.rstrip("/") + "/v1/chat/completions"
        self.token, self.chain_id, self.model, self.post = token, chain_id, model, post

    def call(self, history: list[Message], answer: Message) -> Message:
        body = json.dumps({"model": self.model, "messages": history, "tools": DEMO_TOOLS,
                           ANSWER_FIELD: answer}).encode()
        status, headers, raw = self.post(self.url, body, {
            "Authorization": f"Bearer {self.token}", "Content-Type": "application/json",
            "X-Chain-Id": str(self.chain_id), "X-Agent-Type": "pentester"})
        if status != 200:
            raise DemoCallError(f"the gateway answered {status}: {_error_text(raw)}")
        self.chain_id = int(headers.get("x-chain-id", self.chain_id))  # a successor chain after a rotation
        return json.loads(raw)["choices"][0]["message"]


def _error_text(raw: bytes) -> str:
    try:
        return str(json.loads(raw)["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return raw.decode("utf-8", "replace")[:500]


class DirectTurns:
    """No server to call: the agent's new messages, then the answer, appended as the gateway would."""

    def __init__(self, chain: Chain) -> None:
        self.chain, self.chain_id, self.sent = chain, chain.pk, chain.last_seq  # a resumed chain is already sent

    def call(self, history: list[Message], answer: Message) -> Message:
        if history[self.sent:]:
            chain_append(chain=self.chain, messages=history[self.sent:])
        chain_append(chain=self.chain, messages=[answer])
        self.sent = len(history) + 1
        return answer


class FirstCallFallback:
    """The gateway, unless its very first call fails (a deployment whose ALLOWED_HOSTS or HTTPS redirect keeps
    the server from answering its own loopback address): then the demo writes directly, and says why once."""

    def __init__(self, gateway: GatewayTurns, chain: Chain) -> None:
        self.gateway, self.chain = gateway, chain
        self.active: ModelTurns = gateway
        self.chain_id, self.first = gateway.chain_id, True

    def call(self, history: list[Message], answer: Message) -> Message:
        try:
            reply = self.active.call(history, answer)
        except (DemoCallError, OSError) as exc:
            if not self.first:
                raise
            log.warning("the demo cannot call the gateway at %s (%s): it writes its chain directly", self.gateway.url,
                        exc)
            self.chain.refresh_from_db()
            self.active = direct = DirectTurns(self.chain)
            direct.sent = self.chain.last_seq  # what the failed call already threaded in stays, once
            reply = direct.call(history, answer)
        self.first, self.chain_id = False, self.active.chain_id
        return reply
