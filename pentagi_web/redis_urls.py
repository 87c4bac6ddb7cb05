"""Where the Celery broker/results and the channel layer live in Redis, from REDIS_URL (and CHANNELS_REDIS_URL).

Accepted forms, as redis-py and kombu spell them:
- `redis://host:6379` (or `rediss://` for TLS, with `user:password@` and a query string): no database given,
  so the broker and results use db 0 and the channel layer db 1 (as before a database could be named);
- `redis://host:6379/15`: everything on db 15 — a deployment given one database keeps to it; the channel
  layer's keys live under their own `asgi` prefix there, so they never meet Celery's.
`CHANNELS_REDIS_URL` (same forms) puts the channel layer elsewhere. Anything else (another scheme, a database
that is not a number 0-N, a database in both the path and `?db=`) refuses to start with a message saying which
form works, instead of a ValueError deep inside the worker.
"""
from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = ["RedisTargets", "RedisUrlError", "redis_targets", "with_db"]

SCHEMES = ("redis", "rediss")
DEFAULT_BROKER_DB = 0
DEFAULT_CHANNELS_DB = 1
EXAMPLE = "redis://127.0.0.1:6379 or redis://127.0.0.1:6379/15"


class RedisUrlError(ValueError):
    """REDIS_URL / CHANNELS_REDIS_URL has a form we cannot use; the message says which one works."""


@dataclass(frozen=True)
class RedisTargets:
    broker: str  # Celery broker and result backend
    channels: str  # channels-redis


def _parsed_db(name: str, url: str) -> int | None:
    """The database the URL names (path or ?db=), None when it names none."""
    parts = urlsplit(url)
    if parts.scheme not in SCHEMES:
        raise RedisUrlError(f"{name}={url!r}: the scheme must be redis:// or rediss:// (e.g. {EXAMPLE})")
    if not parts.hostname:
        raise RedisUrlError(f"{name}={url!r}: no host (e.g. {EXAMPLE})")
    path = parts.path.strip("/")
    query_db = dict(parse_qsl(parts.query)).get("db")
    if path and query_db is not None:
        raise RedisUrlError(f"{name}={url!r}: the database is given twice (path and ?db=); keep one")
    raw = path or query_db
    if raw is None or raw == "":
        return None
    if not raw.isascii() or not raw.isdigit():
        raise RedisUrlError(f"{name}={url!r}: the database must be a number such as /15 (e.g. {EXAMPLE})")
    return int(raw)


def with_db(url: str, db: int) -> str:
    """The URL pointing at database `db`, its credentials and query (minus any ?db=) kept."""
    parts = urlsplit(url)
    query = urlencode([(k, v) for k, v in parse_qsl(parts.query) if k != "db"])
    return urlunsplit((parts.scheme, parts.netloc, f"/{db}", query, ""))


def redis_targets(redis_url: str, channels_url: str = "") -> RedisTargets:
    """Broker and channel-layer URLs for REDIS_URL (+ optional CHANNELS_REDIS_URL); raises RedisUrlError."""
    db = _parsed_db("REDIS_URL", redis_url)
    broker = with_db(redis_url, DEFAULT_BROKER_DB if db is None else db)
    if channels_url:
        channels_db = _parsed_db("CHANNELS_REDIS_URL", channels_url)
        channels = with_db(channels_url, DEFAULT_CHANNELS_DB if channels_db is None else channels_db)
    else:
        channels = with_db(redis_url, DEFAULT_CHANNELS_DB if db is None else db)
    return RedisTargets(broker=broker, channels=channels)
