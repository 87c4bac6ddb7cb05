"""The foundation every capability stands on; nothing here reads or writes a model row.

`events` (the live-event contract and `broadcast`), `queue` (background work queued by Celery task name after
commit), `relay` (the client side of the cross-process relay on the embedded default), `settings_spec` (every
setting declared once), `text_input` (text the database can hold), `params` (ids out of query parameters),
`db_threads` (an async view's ORM work in threads that keep their database connection), `bound_cursor` (the
append's statements bound and prepared on PostgreSQL's server), `redis_layer` (the Redis channel layer, with group
sends in fewer round trips).
"""
from flows.core.bound_cursor import numbered, server_bound_cursor
from flows.core.db_threads import API_POOL, DbThreadPool, db_run, pooled_db_threads
from flows.core.events import (
    EVENT_TYPES,
    AgentLoopEvent,
    AppendedUpToEvent,
    BroadcastBatch,
    ChainRewrittenEvent,
    FlowAgentAddedEvent,
    HeartbeatEvent,
    abroadcast,
    bind_event_loop,
    broadcast,
    broadcasts_batched,
    group_name,
    group_notify,
    layer_message,
)
from flows.core.params import parse_id
from flows.core.queue import (
    COMPACT_CHAIN,
    FIT_CHAIN,
    NOT_QUEUED_REASON,
    SUMMARIZE_CHAIN,
    BrokerUnreachable,
    enqueue,
    enqueue_on_commit,
    publishing_in_background,
)
from flows.core.relay import (
    SECRET_HEADER,
    Relay,
    local_url,
    relay_connect,
    relay_current,
    relay_install,
    server_publish,
    server_secret,
    server_unpublish,
)
from flows.core.settings_spec import (
    AGENT,
    ASSISTANT,
    ASSISTANT_FORCED,
    FIELDS_BY_NAME,
    IDENTIFIER_POLICIES,
    PROFILES,
    PRUNING_MODES,
    SETTINGS_FIELDS,
    env_fallback,
    model_help,
)
from flows.core.text_input import (
    MAX_INSTRUCTIONS_CHARS,
    MAX_JSON_DEPTH,
    JsonBodyError,
    instructions_problem,
    json_body,
    lone_surrogate_path,
    plain_text_problem,
    storable_json,
    storable_text,
)

__all__ = [
    "AGENT", "ASSISTANT", "ASSISTANT_FORCED", "AgentLoopEvent", "AppendedUpToEvent", "FlowAgentAddedEvent",
    "BrokerUnreachable", "COMPACT_CHAIN", "ChainRewrittenEvent", "NOT_QUEUED_REASON",
    "EVENT_TYPES", "FIELDS_BY_NAME", "FIT_CHAIN", "HeartbeatEvent", "IDENTIFIER_POLICIES", "JsonBodyError",
    "MAX_INSTRUCTIONS_CHARS", "MAX_JSON_DEPTH",
    "PROFILES", "PRUNING_MODES", "Relay", "SECRET_HEADER", "SETTINGS_FIELDS", "SUMMARIZE_CHAIN", "abroadcast",
    "bind_event_loop", "broadcast", "broadcasts_batched", "BroadcastBatch", "db_run", "DbThreadPool", "API_POOL",
    "enqueue",
    "enqueue_on_commit", "env_fallback", "group_name", "group_notify",
    "instructions_problem", "json_body", "layer_message", "local_url", "lone_surrogate_path", "model_help", "numbered",
    "parse_id", "plain_text_problem", "pooled_db_threads",
    "publishing_in_background", "relay_connect", "relay_current", "relay_install", "server_publish", "server_secret",
    "server_bound_cursor", "server_unpublish", "storable_json", "storable_text",
]
