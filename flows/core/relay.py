"""Live across processes on the embedded default: other processes reach the running server through it.

Without Redis the channel layer and the Celery broker live in memory inside `manage.py run`, so a `replay`,
`import_chain` or `demo` started in another terminal used to write rows nobody heard of: its events went to its
own (empty) channel layer and its summarization tasks to its own memory broker. Now:

- the server publishes where it listens and a secret made fresh at every start in `<var dir>/server.json`
  (mode 0600, beside the database and the secret key, so whoever can read it could write the database anyway);
- a command that finds that file and gets an answer from the server installs a `Relay`: it still writes rows to
  the shared database itself (resume logic, validation and transactions stay exactly as they are), but every
  live event and every queued task is posted to the server's `/internal/relay/`, which broadcasts the event to
  its browsers and queues the task on its worker;
- when no server answers, commands fall back to what they did before (direct writes, their own worker), and
  the server queues at start-up the summarization of any chain whose view is behind its raw messages.

With REDIS_URL set none of this is used: Redis already carries events and tasks between processes.
"""
from __future__ import annotations

import json
import logging
import os
import secrets
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings

__all__ = [
    "Relay", "RELAY_PATH", "SECRET_HEADER", "server_file", "server_publish", "server_unpublish", "server_secret",
    "relay_connect", "relay_install", "relay_current", "local_url",
]

log = logging.getLogger(__name__)

RELAY_PATH = "/internal/relay/"
SECRET_HEADER = "X-Relay-Secret"
PING_TIMEOUT_SECONDS = 2.0
POST_TIMEOUT_SECONDS = 10.0

_secret: str | None = None  # set in the serving process only
_relay: Relay | None = None  # set in a process that forwards to a running server


def server_file() -> Path:
    return Path(settings.VAR_DIR) / "server.json"


def local_url(host: str, port: int) -> str:
    """The address a process on this machine uses: a wildcard bind is reached through the loopback."""
    if host in ("", "0.0.0.0", "::", "[::]"):
        host = "127.0.0.1"
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{port}"


def server_publish(*, host: str, port: int) -> str:
    """Write server.json (atomically, 0600) with a fresh secret and keep the secret for the relay view."""
    global _secret
    _secret = secrets.token_urlsafe(32)
    target = server_file()
    tmp = target.with_name(f".server.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump({"url": local_url(host, port), "secret": _secret, "pid": os.getpid()}, out)
    os.replace(tmp, target)
    return _secret


def server_unpublish() -> None:
    """Remove server.json if it is still ours (a newer server may have replaced it)."""
    global _secret
    _secret = None
    target = server_file()
    try:
        if json.loads(target.read_text()).get("pid") == os.getpid():
            target.unlink()
    except (OSError, ValueError, AttributeError):
        pass


def server_secret() -> str | None:
    """The secret of the server running in this process; None anywhere else (the relay view then is a 404)."""
    return _secret


@dataclass(frozen=True)
class Relay:
    url: str
    secret: str

    def post(self, body: dict[str, Any], *, timeout: float = POST_TIMEOUT_SECONDS) -> dict[str, Any]:
        request = urllib.request.Request(
            self.url + RELAY_PATH, data=json.dumps(body).encode(), method="POST",
            headers={SECRET_HEADER: self.secret, "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=timeout) as response:
            answer = json.loads(response.read() or b"{}")
        return answer if isinstance(answer, dict) else {}

    def send_event(self, chain_id: int, event: dict[str, Any]) -> None:
        self.post({"kind": "event", "chain_id": chain_id, "event": event})

    def queue_task(self, name: str, args: list[Any]) -> None:
        self.post({"kind": "task", "task": name, "args": args})


def _read_server_file() -> Relay | None:
    try:
        data = json.loads(server_file().read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("url"), str) or not isinstance(data.get("secret"), str):
        return None
    return Relay(url=data["url"], secret=data["secret"])


def relay_connect() -> Relay | None:
    """The running server's relay if server.json names one that answers with its secret; else None."""
    if settings.REDIS_URL:
        return None
    relay = _read_server_file()
    if relay is None:
        return None
    try:
        answer = relay.post({"kind": "ping"}, timeout=PING_TIMEOUT_SECONDS)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        log.info("server.json names %s but it does not answer (%s): working on our own", relay.url, exc)
        return None
    return relay if answer.get("ok") is True else None


def relay_install(relay: Relay | None) -> None:
    """From now on this process's events and tasks go to `relay` (None: back to the local layer and broker)."""
    global _relay
    _relay = relay


def relay_current() -> Relay | None:
    return _relay
