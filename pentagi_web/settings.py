"""Django settings, driven by environment variables.

Defaults run everything on one machine with nothing to install: SQLite (WAL), the in-memory channel layer and
Celery's in-process memory broker (the `run` command embeds the worker). Setting `DATABASE_URL` (PostgreSQL) and
`REDIS_URL` switches to the scale-out column of docs/design.md: Redis broker/result backend and channels-redis.
"""
from __future__ import annotations

import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from pentagi_web.redis_urls import RedisUrlError, redis_targets
from pentagi_web.security import HSTS_SECONDS
from summarizer.tokens.encodings import ensure_offline_encodings

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("PENTAGI_WEB_VAR_DIR", BASE_DIR / "var"))
VAR_DIR.mkdir(parents=True, exist_ok=True)


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name, "").strip().lower()
    return default if raw == "" else raw in {"1", "true", "yes", "on"}


def _secret_key() -> str:
    """SECRET_KEY from the environment, else one generated once and kept in var/ (never committed)."""
    if os.environ.get("SECRET_KEY"):
        return os.environ["SECRET_KEY"]
    key_file = VAR_DIR / "secret_key"
    if not key_file.exists():
        from django.core.management.utils import get_random_secret_key

        key_file.write_text(get_random_secret_key())
        key_file.chmod(0o600)
    return key_file.read_text().strip()


SECRET_KEY = _secret_key()
DEBUG = env_bool("DEBUG", False)
ALLOWED_HOSTS = [h for h in os.environ.get("ALLOWED_HOSTS", "127.0.0.1,localhost,testserver").split(",") if h]
CSRF_TRUSTED_ORIGINS = [o for o in os.environ.get("CSRF_TRUSTED_ORIGINS", "").split(",") if o]
# HTTPS=true behind a TLS-terminating proxy that sets X-Forwarded-Proto: cookies only over HTTPS, plain HTTP
# redirected, a one-year HSTS, and the proxy's header trusted for request.is_secure().
HTTPS = env_bool("HTTPS", False)
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = SECURE_SSL_REDIRECT = HTTPS
SECURE_HSTS_SECONDS = HSTS_SECONDS if HTTPS else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = HTTPS
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if HTTPS else None

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "flows.apps.FlowsConfig",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "pentagi_web.security.ContentSecurityPolicyMiddleware",
    # Static files straight from the ASGI app (compressed, far-future cached): plain Daphne serves them too.
    "pentagi_web.static_middleware.StaticFilesMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "pentagi_web.urls"
ASGI_APPLICATION = "pentagi_web.asgi.application"
WSGI_APPLICATION = None

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]


def database_config(url: str | None) -> dict:
    """One database from DATABASE_URL; SQLite (under var/) when unset."""
    # No persistent connections: under ASGI every request runs in a worker thread, and a connection kept per
    # thread (conn_max_age > 0) piles up to the thread count per process until PostgreSQL refuses clients.
    # Closed at the end of each request, connections are bounded by the requests in flight.
    config = dj_database_url.parse(url or f"sqlite:///{VAR_DIR / 'db.sqlite3'}", conn_max_age=0)
    if config["ENGINE"].endswith("sqlite3"):
        # WAL lets the embedded worker write while pages read; the timeout absorbs short write contention.
        config["OPTIONS"] = {
            "timeout": 20,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            "transaction_mode": "IMMEDIATE",
        }
        config["CONN_MAX_AGE"] = 0
        # A file (not :memory:) so live-server tests can share it with Daphne subprocesses, which inherit the
        # run id through the environment; one file per test run so concurrent runs never share a database.
        run_id = os.environ.setdefault("PENTAGI_TEST_RUN_ID", str(os.getpid()))
        config["TEST"] = {"NAME": str(VAR_DIR / f"test_db_{run_id}.sqlite3")}
    elif config["ENGINE"].endswith("postgresql"):
        # The few statements an agent's append runs every time are prepared once per kept connection
        # (flows/core/bound_cursor.py); Django prepares nothing else. 0 turns it off (a pooler in transaction
        # mode that does not keep prepared statements).
        threshold = int(env_number("POSTGRES_PREPARE_THRESHOLD", 5, minimum=0, whole=True))
        config.setdefault("OPTIONS", {})["prepare_threshold"] = threshold or None
    return config


def __getattr__(name: str):
    # DATABASES is built when Django reads the settings (django.setup), not at import: a tool that imports
    # this module first and sets DATABASE_URL afterwards still gets the database it asked for.
    if name == "DATABASES":
        return {"default": database_config(os.environ.get("DATABASE_URL"))}
    raise AttributeError(name)


def __dir__() -> list[str]:
    return [*globals(), "DATABASES"]


DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", VAR_DIR / "staticfiles"))
if "STATIC_ROOT" not in os.environ:
    STATIC_ROOT.mkdir(exist_ok=True)  # WhiteNoise warns about a missing root before the first collectstatic
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # collectstatic writes hashed names (app.3f2a….css) plus gzip/brotli copies, which WhiteNoise serves with a
    # one-year immutable Cache-Control; before collectstatic, plain names come from static/ (short cache).
    "staticfiles": {"BACKEND": "pentagi_web.static_storage.ManifestWhenCollectedStorage"},
}
WHITENOISE_USE_FINDERS = True  # `manage.py run` and tests work without collectstatic
WHITENOISE_AUTOREFRESH = DEBUG

# Biggest request body we accept (bytes): a batch of agent messages with large tool outputs fits; more is a 413.
DATA_UPLOAD_MAX_MEMORY_SIZE = int(os.environ.get("MAX_REQUEST_BYTES", 16 * 1024 * 1024))
FILE_UPLOAD_MAX_MEMORY_SIZE = DATA_UPLOAD_MAX_MEMORY_SIZE

# The gateway (/v1/) runs its ORM work in this many threads per server process, each keeping its database
# connection for up to GATEWAY_DB_CONN_MAX_AGE seconds (flows/gateway/hops.py): a bounded pool, unlike the
# per-request threads of pages, whose connections close with the request (see database_config).
def env_number(name: str, default: float, *, minimum: float, whole: bool = False) -> float:
    raw = os.environ.get(name, "").strip()
    try:
        value = (int(raw) if whole else float(raw)) if raw else default
    except ValueError:
        value = minimum - 1
    if value < minimum:
        kind = "a whole number" if whole else "a number"
        raise ImproperlyConfigured(f"{name}={raw!r}: must be {kind} of at least {minimum:g}")
    return value


GATEWAY_DB_THREADS = int(env_number("GATEWAY_DB_THREADS", 4, minimum=1, whole=True))
GATEWAY_DB_CONN_MAX_AGE = env_number("GATEWAY_DB_CONN_MAX_AGE", 300.0, minimum=0)
# The same for an agent's API requests with a bearer token (appends, catch-up, chain reads: flows/api/asgi.py,
# flows/core/db_threads.py); their connections are kept for GATEWAY_DB_CONN_MAX_AGE seconds too.
API_DB_THREADS = int(env_number("API_DB_THREADS", 4, minimum=1, whole=True))
# A completed turn's summarization waits this long in the queue before a worker runs it (flows/ingest/append.py):
# the turns appended meanwhile coalesce into that one run, so an agent appending turns faster than a run takes is
# summarized about once per (run time + this) per chain instead of back to back, each run a little larger; the
# view follows a turn this much later. 0: as soon as a worker is free.
SUMMARY_DELAY_SECONDS = env_number("SUMMARY_DELAY_SECONDS", 1.0, minimum=0)
# Every server process closes calls and events left "running" and removes half-written imports this often
# (flows/gateway/sweep.py); 0 turns the sweep off (the test process does: its tests run the sweep themselves).
SWEEP_INTERVAL_SECONDS = env_number("SWEEP_INTERVAL_SECONDS", 30.0, minimum=0)

REDIS_URL = os.environ.get("REDIS_URL", "").strip()
# Namespace for every Redis key we write (broker queues, unacked sets, results, channel groups), so deployments or
# test runs can share one Redis without taking each other's tasks or events.
REDIS_KEY_PREFIX = os.environ.get("REDIS_KEY_PREFIX", "")
# Above channels-redis' 5 s blocking pop (BZPOPMIN): redis-py 8's default read timeout is also 5 s, and a pop
# that waits its full time then fails every socket consumer with "Timeout reading from ...".
CHANNELS_SOCKET_TIMEOUT_SECONDS = 30
# Frames one WebSocket viewer may have queued in the channel layer before new ones are dropped (channels'
# default of 100 overflowed at 18 appends/s with 50 viewers). Consumers coalesce bursts and send a heartbeat
# with the chain's last seq, so a drop delays a message until the page catches up; it never loses it.
CHANNEL_CAPACITY = int(os.environ.get("CHANNEL_CAPACITY", 2000))
# Seconds between the heartbeat frames (chain's last seq) each viewer's socket receives.
LIVE_HEARTBEAT_SECONDS = float(os.environ.get("LIVE_HEARTBEAT_SECONDS", 5))
# Appends arriving within this window after one was sent are coalesced into one "appended up to seq N" frame: at
# most this much is added to an append's way to the browser (0.25 s held half the appends of an agent appending
# every 100 ms for up to a quarter second), and a viewer gets at most 1/window frames a second per chain.
LIVE_COALESCE_SECONDS = float(os.environ.get("LIVE_COALESCE_SECONDS", 0.05))
if REDIS_URL:
    try:
        _redis = redis_targets(REDIS_URL, os.environ.get("CHANNELS_REDIS_URL", "").strip())
    except RedisUrlError as exc:
        raise ImproperlyConfigured(str(exc)) from None
    CHANNEL_LAYERS = {
        "default": {"BACKEND": "flows.core.redis_layer.RedisLayer",  # channels_redis, group sends in fewer trips
                    "CONFIG": {"hosts": [{"address": _redis.channels,
                                          "socket_timeout": CHANNELS_SOCKET_TIMEOUT_SECONDS}],
                               "prefix": REDIS_KEY_PREFIX + "asgi", "capacity": CHANNEL_CAPACITY}}
    }
    CELERY_BROKER_URL = _redis.broker
    CELERY_RESULT_BACKEND = _redis.broker
    # Shared by every process (login failure counts): on the broker's database, under the key prefix.
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": _redis.broker,
                          "KEY_PREFIX": REDIS_KEY_PREFIX + "cache"}}
else:
    # One process: the `run` command embeds the worker, so in-memory broker and layer are shared.
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer",
                                  "CONFIG": {"capacity": CHANNEL_CAPACITY}}}
    CELERY_BROKER_URL = "memory://"
    CELERY_RESULT_BACKEND = "cache+memory://"
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TASK_EAGER_PROPAGATES = False
CELERY_TASK_ACKS_LATE = True  # a worker killed mid-task gets its task re-delivered
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": int(os.environ.get("CELERY_VISIBILITY_TIMEOUT", 300))}
# Nothing reads a task's return value (tasks record events in the database), so no celery-task-meta-* keys are
# written; should a result ever be stored, it lands under REDIS_KEY_PREFIX like every other key.
CELERY_TASK_IGNORE_RESULT = True
CELERY_RESULT_BACKEND_TRANSPORT_OPTIONS: dict[str, str] = {}
if REDIS_KEY_PREFIX:
    CELERY_BROKER_TRANSPORT_OPTIONS["global_keyprefix"] = REDIS_KEY_PREFIX
    CELERY_RESULT_BACKEND_TRANSPORT_OPTIONS["global_keyprefix"] = REDIS_KEY_PREFIX
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": "pentagi_web.request_ids.RequestIdFilter"}},
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s]: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain", "filters": ["request_id"]}},
    "loggers": {
        # Every 4xx/5xx answer, a 500 with its traceback (Django's own logger had no handler outside DEBUG).
        "django.request": {"handlers": ["console"], "level": "WARNING", "propagate": False},
        "flows": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
        "summarizer": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    },
}

# tiktoken must never try the network: seed its cache from the bundled official files at start-up.
TIKTOKEN_CACHE_DIR = ensure_offline_encodings()
