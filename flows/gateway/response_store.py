"""The Responses API's answers under our own ids: minted, saved with the call, resolved, read and deleted.

The agent sees only our ids (`resp_` + 48 hex digits); each maps to the upstream's id and to a position in a
chain (`GatewayResponse`). A stateful client's `previous_response_id` resolves to the conversation through
that response: the chain's raw messages up to the position, checked against the conversation's prefix hash,
and remembered per process (a bounded LRU), so a 1,000-turn stateful session does not re-read its chain on
every call. Another user's id, a deleted one or one never issued is the same 404 (no one learns which ids
exist); a conversation whose chain no longer holds it verbatim (a compaction seeded a successor segment and
this process has forgotten it) is a clear 409 asking for the whole input.
"""
from __future__ import annotations

import secrets
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from django.utils import timezone

from flows.engine import messages_to_responses_output
from flows.gateway.prefixes import prefix_hashes
from flows.gateway.wire import GatewayError
from flows.models import GatewayCall, GatewayResponse, Message

__all__ = ["ID_PREFIX", "new_response_id", "Resolved", "resolve_previous", "remember", "response_save",
           "response_read", "response_input_items", "response_delete", "forget_all"]

ID_PREFIX = "resp_"
MEMO_SIZE = 256
Msg = dict[str, Any]


def new_response_id() -> str:
    return ID_PREFIX + secrets.token_hex(24)


@dataclass(frozen=True)
class Resolved:
    """The conversation through a stored response, and where the upstream has it."""

    row: GatewayResponse
    messages: list[Msg]
    hashes: list[str]


class _Memo:
    """Per process: the conversation through each recent response (our id -> messages, hashes)."""

    def __init__(self, size: int) -> None:
        self.size, self.lock = size, threading.Lock()
        self.items: OrderedDict[str, tuple[list[Msg], list[str]]] = OrderedDict()

    def get(self, key: str) -> tuple[list[Msg], list[str]] | None:
        with self.lock:
            found = self.items.get(key)
            if found is not None:
                self.items.move_to_end(key)
            return found

    def put(self, key: str, value: tuple[list[Msg], list[str]]) -> None:
        with self.lock:
            self.items[key] = value
            self.items.move_to_end(key)
            while len(self.items) > self.size:
                self.items.popitem(last=False)

    def clear(self) -> None:
        with self.lock:
            self.items.clear()


_MEMO = _Memo(MEMO_SIZE)


def forget_all() -> None:
    """Drop the per-process conversations (tests use it to prove the database path)."""
    _MEMO.clear()


def remember(response_id: str, messages: list[Msg], hashes: list[str]) -> None:
    """The conversation through a response just answered (its output included), for its next request."""
    _MEMO.put(response_id, (messages, hashes))


def _not_found(response_id: str) -> GatewayError:
    return GatewayError(404, f"Response with id '{response_id[:100]}' not found.", code="response_not_found")


def _row(user: Any, response_id: str) -> GatewayResponse:
    row = (GatewayResponse.objects.filter(response_id=response_id, user=user, deleted_at=None)
           .select_related("call").first())
    if row is None:
        raise _not_found(response_id)
    return row


def resolve_previous(user: Any, response_id: str) -> Resolved:
    """The conversation a `previous_response_id` continues (404 unless it is one of the user's responses)."""
    row = _row(user, response_id)
    found = _MEMO.get(response_id)
    if found is None:
        messages = _stored_conversation(row)
        hashes = prefix_hashes(messages)
        if not hashes or hashes[-1] != row.history_hash:
            raise GatewayError(409, f"response '{response_id}' can no longer be continued by id: its chain was "
                               "compacted into a new segment; send the whole conversation as 'input'",
                               code="previous_response_unavailable")
        found = (messages, hashes)
        _MEMO.put(response_id, found)
    return Resolved(row=row, messages=list(found[0]), hashes=list(found[1]))


def _stored_conversation(row: GatewayResponse) -> list[Msg]:
    """The chain's raw messages through the response, its answer added when the chain did not take it."""
    rows = Message.objects.filter(chain_id=row.chain_id, seq__lte=row.seq_to).order_by("seq")
    messages = [m.to_dict() for m in rows]
    answer = row.call.response_message
    if row.call.response_seq is None and isinstance(answer, dict):
        messages.append(answer)
    return messages


def response_save(*, response_id: str, call: GatewayCall, seq_to: int, history_hash: str, upstream_id: str,
                  upstream_stored: bool, body: dict[str, Any]) -> GatewayResponse:
    """The response's row, written with its call's record (one transaction, see records)."""
    return GatewayResponse.objects.create(response_id=response_id, user_id=call.user_id, call=call,
                                          chain_id=call.chain_id, seq_to=seq_to, history_hash=history_hash,
                                          upstream_id=upstream_id, upstream_stored=upstream_stored, body=body)


def response_read(user: Any, response_id: str) -> dict[str, Any]:
    """`GET /v1/responses/{id}`: the response object as the agent got it."""
    body: dict[str, Any] = _row(user, response_id).body
    return body


def response_input_items(user: Any, response_id: str, *, limit: int = 20, after: str | None = None,
                         order: str = "desc") -> dict[str, Any]:
    """`GET /v1/responses/{id}/input_items`: the items the response was made from (its conversation before
    its output), a page of OpenAI's list shape; items without an id get a stable one from their position."""
    resolved = resolve_previous(user, response_id)
    answered = isinstance(resolved.row.call.response_message, dict)
    before_output = resolved.messages[:-1] if answered else resolved.messages
    items = [{**item, "id": item.get("id") or f"item_{n}"}
             for n, item in enumerate(messages_to_responses_output(before_output))]
    if order == "desc":
        items.reverse()
    if after is not None:
        ids = [i["id"] for i in items]
        items = items[ids.index(after) + 1:] if after in ids else []
    page = items[:limit]
    return {"object": "list", "data": page, "first_id": page[0]["id"] if page else None,
            "last_id": page[-1]["id"] if page else None, "has_more": len(items) > len(page)}


def response_delete(user: Any, response_id: str) -> dict[str, Any]:
    """`DELETE /v1/responses/{id}`: the id stops resolving; the chain keeps its messages (raw history stays)."""
    row = _row(user, response_id)
    GatewayResponse.objects.filter(pk=row.pk).update(deleted_at=timezone.now())
    with _MEMO.lock:
        _MEMO.items.pop(response_id, None)
    return {"id": response_id, "object": "response", "deleted": True}
