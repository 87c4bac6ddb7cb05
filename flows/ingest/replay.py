"""Replay an uploaded transcript into a new flow, turn by turn, inside the server (the browser's "replay live").

The transcript is checked whole before anything is written (`transcript_validate`), so a replay never stops
half-way on bad input. The appends then run in a daemon thread of the serving process: each batch goes through
`chain_append`, which broadcasts it to the open chain page and queues the summarization on the worker.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Any

from django.db import close_old_connections, connection

from flows.ingest.append import chain_append
from flows.ingest.create import agent_create, flow_create
from flows.ingest.errors import AppendError
from flows.ingest.importing import transcript_validate
from flows.models import Chain, Profile

__all__ = ["REPLAY_TURN_SECONDS", "chain_replay", "chain_replay_create", "chain_replay_start", "turn_batches"]

Message = dict[str, Any]

log = logging.getLogger(__name__)

REPLAY_TURN_SECONDS = 1.0  # pause between turns at speed 1 (as `manage.py replay`)


def chain_replay_create(*, owner: Any, messages: Any, title: str, model_name: str = "",
                        agent_type: str = "primary_agent", profile: str = Profile.AGENT) -> tuple[Chain, list]:
    """Validate the whole transcript, then create its empty flow/agent/chain; returns the chain and turns."""
    batch = transcript_validate(messages)
    flow = flow_create(owner=owner, title=title or "Replayed chain", model_name=model_name)
    chain = agent_create(flow=flow, agent_type=agent_type, profile=profile).chains.get(is_active=True)
    return chain, turn_batches(batch)


def chain_replay(*, chain: Chain, batches: list[list[dict[str, Any]]], pause_seconds: float,
                 stop: threading.Event | None = None) -> int:
    """Append the batches in order with a pause between them; returns how many messages were appended."""
    appended = 0
    for i, batch in enumerate(batches):
        if stop is not None and stop.is_set():
            break
        if i and pause_seconds:
            time.sleep(pause_seconds)
        try:
            appended += chain_append(chain=chain, messages=batch).appended
        except AppendError as exc:  # validated up front; only a concurrent writer can get here
            log.warning("replay into chain %s stopped after %s messages: %s", chain.pk, appended, exc)
            break
    return appended


def _run(chain: Chain, batches: list[list[dict[str, Any]]], pause_seconds: float) -> None:
    close_old_connections()
    try:
        chain_replay(chain=chain, batches=batches, pause_seconds=pause_seconds)
    except Exception:  # a crashed replay must be visible in the log; the rows written so far stay valid
        log.exception("replay into chain %s failed", chain.pk)
    finally:
        connection.close()  # this thread's own connection


def chain_replay_start(*, chain: Chain, batches: list[list[dict[str, Any]]], speed: float) -> threading.Thread:
    """Replay in a daemon thread of this process (the server's), `speed` times faster than one turn a second."""
    pause = REPLAY_TURN_SECONDS / speed if speed > 0 else 0.0
    thread = threading.Thread(target=_run, args=(chain, batches, pause), name=f"replay-{chain.pk}", daemon=True)
    thread.start()
    return thread


def turn_batches(messages: list[Message]) -> list[list[Message]]:
    """Split a chain into what an agent sends at once: the opening system/user messages, then each assistant
    message with the tool results that answer it, and each later user message on its own."""
    batches: list[list[Message]] = []
    for m in messages:
        role = m.get("role")
        opening = batches and all(x.get("role") in ("system", "user") for x in batches[-1]) and len(batches) == 1
        if role == "tool" and batches:
            batches[-1].append(m)
        elif role in ("system", "user") and opening:
            batches[-1].append(m)
        else:
            batches.append([m])
    return batches
