"""How messages enter: flows and agents, the append-only raw history, imports, live replays, accounts and the
one bearer-token check.

`append` (`chain_append`: validate, lock, write, then announce and queue the summarization), `chain_lock` (the
append's locking read, compiled once per reader kind), `rows_insert` (the rows' one INSERT, its text built once
per row count, with the chain's head update riding in it on PostgreSQL), `pairing` (which tool results a batch
may append), `importing` (a transcript as a new flow), `replay` (a transcript appended turn by turn), `create`
(flows and agents), `accounts` (users and API tokens), `auth` (`bearer_user`, cached).
"""
from flows.ingest.accounts import api_token_create, api_token_rotate, user_ensure
from flows.ingest.append import (
    MAX_BATCH_MESSAGES,
    MAX_IMPORT_MESSAGES,
    MAX_MESSAGE_BYTES,
    batch_validate,
    chain_append,
    chain_append_locked,
)
from flows.ingest.auth import InvalidToken, bearer_user, bearer_value, tokens_changed
from flows.ingest.chain_lock import locked_chain
from flows.ingest.create import agent_create, flow_create, flow_set_status
from flows.ingest.errors import AppendError, AppendResult
from flows.ingest.importing import chain_import, imports_remove_interrupted, transcript_validate
from flows.ingest.pairing import turn_completed
from flows.ingest.replay import chain_replay, chain_replay_create, chain_replay_start, turn_batches

__all__ = [
    "AppendError", "AppendResult", "InvalidToken", "MAX_BATCH_MESSAGES", "MAX_IMPORT_MESSAGES", "MAX_MESSAGE_BYTES",
    "agent_create", "api_token_create", "api_token_rotate", "batch_validate", "bearer_user", "bearer_value",
    "chain_append", "chain_append_locked", "chain_import", "chain_replay", "chain_replay_create",
    "chain_replay_start", "flow_create", "flow_set_status", "imports_remove_interrupted", "locked_chain",
    "tokens_changed", "transcript_validate", "turn_batches",
    "turn_completed", "user_ensure",
]
