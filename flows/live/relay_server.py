"""POST `/internal/relay/`: another process on this machine hands the running server an event or a task.

Only the process serving `manage.py run` knows the secret (flows.core.relay); anywhere else this is a 404. The body
is one of `{"kind": "ping"}`, `{"kind": "event", "chain_id", "event"}` (broadcast to that chain's browsers) or
`{"kind": "task", "task", "args"}` (queued on this server's worker). Nothing here writes to the database.
"""
from __future__ import annotations

import hmac
import json
from typing import Any, TypeGuard

from django.http import Http404, HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from flows.core import EVENT_TYPES, SECRET_HEADER, broadcast, server_secret
from flows.models import Chain
from flows.pipeline import RELAYED_TASKS

__all__ = ["relay_endpoint"]


class _BadRelay(ValueError):
    pass


def _authorized(request: HttpRequest) -> bool:
    secret = server_secret()
    if secret is None:
        raise Http404("no server runs in this process")
    given = request.headers.get(SECRET_HEADER, "")
    return hmac.compare_digest(given.encode(), secret.encode())


def _is_id(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value < 2**63


def _relay_event(body: dict[str, Any]) -> None:
    chain_id, event = body.get("chain_id"), body.get("event")
    if not _is_id(chain_id) or not isinstance(event, dict):
        raise _BadRelay("'chain_id' must be a positive integer and 'event' an object")
    if event.get("type") not in EVENT_TYPES or event.get("chain_id") != chain_id:
        raise _BadRelay(f"'event.type' must be one of {', '.join(EVENT_TYPES)} with the same chain_id")
    if not Chain.objects.filter(pk=chain_id).exists():
        raise _BadRelay(f"no chain {chain_id}")
    broadcast(chain_id, event)  # type: ignore[arg-type]  # validated above; consumers forward it as is


def _relay_task(body: dict[str, Any]) -> None:
    name, args = body.get("task"), body.get("args")
    if not isinstance(name, str) or name not in RELAYED_TASKS:
        raise _BadRelay(f"'task' must be one of {', '.join(RELAYED_TASKS)}")
    task, fewest, most = RELAYED_TASKS[name]
    if not isinstance(args, list) or not fewest <= len(args) <= most or not _is_id(args[0]) \
            or not all(a is None or _is_id(a) for a in args[1:]):
        raise _BadRelay(f"'args' must be {fewest} to {most} ids, the first the chain's")
    task.delay(*args)


@csrf_exempt  # not a browser form: the per-start secret in a header authenticates the caller
@require_POST
def relay_endpoint(request: HttpRequest) -> JsonResponse:
    if not _authorized(request):
        return JsonResponse({"error": "forbidden", "detail": f"missing or wrong {SECRET_HEADER}"}, status=403)
    try:
        body = json.loads(request.body or b"null")
        if not isinstance(body, dict):
            raise _BadRelay("the body must be a JSON object")
        kind = body.get("kind")
        if kind == "event":
            _relay_event(body)
        elif kind == "task":
            _relay_task(body)
        elif kind != "ping":
            raise _BadRelay("'kind' must be ping, event or task")
    except (ValueError, UnicodeDecodeError) as exc:  # _BadRelay and JSON errors alike
        return JsonResponse({"error": "invalid_body", "detail": str(exc)[:300]}, status=400)
    return JsonResponse({"ok": True})
