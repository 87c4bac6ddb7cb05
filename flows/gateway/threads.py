"""Writes of the gateway: thread a request into a chain, prepare what goes upstream, record the call.

Threading (`gateway_thread`) is all or nothing: under a row lock the matched chain's head hash is checked
again, so two requests racing for one chain never interleave their messages; the loser threads again and,
its history no longer being a prefix, continues in a successor chain ("client rewrote its history").

A request an earlier call already sent (an SDK retry, a client replaying a call it lost: its messages are a
prefix the chain holds) is not a rewrite: it continues that call's chain, appends nothing and is recorded as a
retry of that call (`ThreadResult.retry_of`); only a history that really differs starts a successor.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from flows.core import ChainRewrittenEvent, FlowAgentAddedEvent, broadcast
from flows.gateway.prefixes import (
    EMPTY_HASH,
    Match,
    best_match,
    extend_hash,
    message_digest,
    prefix_hashes,
    root_index,
)
from flows.ingest import (
    MAX_BATCH_MESSAGES,
    AppendError,
    agent_create,
    batch_validate,
    chain_append_locked,
    flow_create,
    locked_chain,
)
from flows.models import AGENT_TYPES, Agent, Chain, Flow, GatewayCall, Message, Outcome, SummaryEvent, Trigger
from flows.pipeline import active_bytes

__all__ = ["MAX_THREAD_ATTEMPTS", "ChainNotFound", "ThreadResult", "gateway_thread", "gateway_answer_append"]

MAX_THREAD_ATTEMPTS = 3
TITLE_CHARS = 80
MAX_ANNOUNCED_CHAINS = 20  # as many chains as a flow page listens to (pages.selectors.MAX_LIVE_CHAINS)

Msg = dict[str, Any]


def _append_all(chain: Chain, messages: list[Msg], known: list[Msg] | None, **chain_fields: Any) -> None:
    """Append the request's new `messages` in batches of chain_append's maximum (a first request may carry a
    long history), holding the row lock; `known` is the chain's raw history in hand (see _history_in_hand)."""
    for offset in range(0, len(messages), MAX_BATCH_MESSAGES):
        batch = messages[offset:offset + MAX_BATCH_MESSAGES]
        last = offset + MAX_BATCH_MESSAGES >= len(messages)
        try:
            chain_append_locked(chain=chain, batch=batch_validate(batch),
                                prior=None if known is None else known + messages[:offset],
                                **(chain_fields if last else {}))
        except AppendError as exc:
            if exc.index is None or not offset:
                raise
            raise AppendError(exc.code, exc.reason, index=exc.index + offset, field=exc.field, status=exc.status,
                              extra=exc.extra) from None


def _locked(chain_id: int) -> Chain:
    """The chain under its row lock, with agent and flow (only the chain's row is locked on PostgreSQL)."""
    return locked_chain(chain_id)


class ChainNotFound(LookupError):
    """An X-Chain-Id that is not one of the token owner's chains."""


class _HeadMoved(Exception):
    """The matched chain changed between matching and locking: match again."""


@dataclass
class ThreadResult:
    chain: Chain
    appended: int
    head_hash: str
    rewritten_from: int | None = None  # the chain this request's rewritten history replaces
    retry_of: int | None = None  # the earlier call (GatewayCall pk) that sent exactly these messages
    replay: bool = False  # the chain holds more than the request (its answer, later turns): nothing goes after it


def _title(messages: list[Msg]) -> str:
    for message in messages:
        if message["role"] == "user" and isinstance(message.get("content"), str) and message["content"].strip():
            return " ".join(message["content"].split())[:TITLE_CHARS]
    return "Gateway agent"


def _owned_chains(user: Any, pinned: int | None, session: str = "") -> Any:
    """The active chains a request may continue: the pinned agent's, else those of the owner's flow of the
    request's session (none: of the owner's flows without one), so a session never reaches into another."""
    chains = Chain.objects.filter(agent__flow__owner=user, is_active=True)
    if pinned is None:
        return chains.filter(agent__flow__session_id=session)
    pin = Chain.objects.filter(pk=pinned, agent__flow__owner=user).values_list("agent_id", flat=True).first()
    if pin is None:
        raise ChainNotFound(pinned)
    return chains.filter(agent_id=pin)


def gateway_thread(*, user: Any, messages: list[Msg], pinned_chain_id: int | None = None,
                   agent_type: str = "primary_agent", model_name: str = "",
                   hashes: list[str] | None = None, session: str = "") -> ThreadResult:
    """Append the request's new messages to the chain it continues (or a successor, or a new chain).

    `hashes` are `prefix_hashes(messages)` when the caller has them (the gateway's HistoryMemo). With a
    `session` (flows/gateway/sessions.py) a new conversation lands in the owner's flow of that session, in its
    agent of `agent_type`; without one it starts a flow of its own."""
    hashes = prefix_hashes(messages) if hashes is None else hashes
    root = hashes[root_index(messages)]
    known = set(hashes)
    for _attempt in range(MAX_THREAD_ATTEMPTS):
        chains = _owned_chains(user, pinned_chain_id, session)
        try:
            with transaction.atomic():
                # A chain that is a prefix of the request shares its root: one indexed lookup, whatever the
                # history, which also locks the candidates (the usual match is extended without a second read).
                rows = {chain.pk: chain for chain in _locked_candidates(chains, {root, hashes[0]})}
                candidates = [(pk, chain.head_hash) for pk, chain in rows.items()
                              if chain.head_seq == chain.last_seq and chain.head_hash in known]
                if pinned_chain_id is not None:  # a pinned agent whose chain is still empty takes the request
                    candidates += [(pk, EMPTY_HASH) for pk in chains.filter(last_seq=0).values_list("pk", flat=True)]
                match = best_match(hashes, candidates)
                if match is not None and match.chain_id in rows:
                    return _extend_locked(rows[match.chain_id], match, messages, hashes)
            if match is not None:
                return _extend(match, messages, hashes)
            replayed = _replayed(chains, hashes[-1])
            if replayed is not None:
                return replayed
            previous = chains.filter(root_hash=root).order_by("-updated_at", "-pk").first()
            if previous is None and pinned_chain_id is not None:
                previous = chains.order_by("-pk").first()
            if previous is not None:
                return _rewrite(previous, messages, hashes)
            if session and pinned_chain_id is None:
                return _session_start(user, session, messages, hashes, agent_type, model_name)
        except _HeadMoved:
            continue
        return _create(user, messages, hashes, agent_type, model_name)
    raise _HeadMoved("the chain kept changing under this request")


def _locked_candidates(chains: Any, roots: set[str]) -> list[Chain]:
    """The chains (of `chains`) rooted at one of `roots`, under their row locks, with agent and flow."""
    return list(chains.filter(root_hash__in=roots).select_for_update(of=("self",)).select_related("agent__flow"))


def _extend(match: Match, messages: list[Msg], hashes: list[str]) -> ThreadResult:
    with transaction.atomic():
        return _extend_locked(_locked(match.chain_id), match, messages, hashes)


def _extend_locked(chain: Chain, match: Match, messages: list[Msg], hashes: list[str]) -> ThreadResult:
    """Append the request's messages after the `match.known` the chain holds; the caller holds its row lock."""
    new = messages[match.known:]
    expected = hashes[match.known - 1] if match.known else EMPTY_HASH
    if not chain.is_active or chain.head_hash != expected or chain.head_seq != chain.last_seq:
        raise _HeadMoved(chain.pk)
    if new:
        _append_all(chain, new, _history_in_hand(chain, messages[:match.known]),
                    **_head(hashes, messages, chain.last_seq + len(new)))
    retry_of = None if new else _earlier_call([chain.agent_id], hashes[-1])
    return ThreadResult(chain=chain, appended=len(new), head_hash=hashes[-1], retry_of=retry_of)


def _earlier_call(agent_ids: Any, request_hash: str) -> int | None:
    """The first call of these agents that sent exactly the messages hashing to `request_hash` (the one a
    resend repeats, however often it is resent)."""
    calls = GatewayCall.objects.filter(chain__agent_id__in=agent_ids, request_hash=request_hash)
    return calls.order_by("pk").values_list("pk", flat=True).first()


def _replayed(chains: Any, request_hash: str) -> ThreadResult | None:
    """A request no chain's head continues but an earlier call of one of these chains' agents sent (the chain
    has moved past it: the answer, later turns): it continues that agent's active chain, appending nothing,
    as a retry of that call. The agent's chain may have been rotated by a compaction since: the call's chain
    is then archived, and its agent's active chain holds the history on."""
    call_id = _earlier_call(chains.values("agent_id"), request_hash)
    if call_id is None:
        return None
    agent_id = GatewayCall.objects.filter(pk=call_id).values_list("chain__agent_id", flat=True).get()
    chain = chains.filter(agent_id=agent_id).order_by("-pk").first()
    if chain is None:
        return None
    with transaction.atomic():  # the caller's transaction keeps the lock (admission threads in one)
        locked = _locked(chain.pk)
    return ThreadResult(chain=locked, appended=0, head_hash=request_hash, retry_of=call_id, replay=True)


def _history_in_hand(chain: Chain, known: list[Msg]) -> list[Msg] | None:
    """The request's known messages when they are exactly the chain's raw messages (not so in a successor
    that a compaction seeded with a summary): then appends check pairing in memory, else they read the tail."""
    return known if len(known) == chain.last_seq else None


def _head(hashes: list[str], messages: list[Msg], last_seq: int) -> dict[str, Any]:
    """Chain fields that record the request's history as the chain's head (written with the last append, after
    which the chain's last seq is `last_seq`)."""
    return {"head_hash": hashes[-1], "head_seq": last_seq, "root_hash": hashes[root_index(messages)]}


def _create(user: Any, messages: list[Msg], hashes: list[str], agent_type: str, model_name: str) -> ThreadResult:
    with transaction.atomic():
        flow = flow_create(owner=user, title=_title(messages), model_name=model_name)
        agent = agent_create(flow=flow, agent_type=agent_type if agent_type in AGENT_TYPES else "primary_agent")
        chain = _locked(agent.chains.get(is_active=True).pk)
        _append_all(chain, messages, [], **_head(hashes, messages, len(messages)))
    return ThreadResult(chain=chain, appended=len(messages), head_hash=hashes[-1])


def _session_flow(user: Any, session: str, title: str, model_name: str) -> Flow:
    """The owner's flow of `session`, created by its first call, under its row lock (its agents are created
    one at a time); two first calls racing meet at the unique (owner, session) constraint."""
    for _attempt in range(2):
        found = Flow.objects.select_for_update().filter(owner=user, session_id=session).first()
        if found is not None:
            return found
        try:
            with transaction.atomic():
                return flow_create(owner=user, title=title, model_name=model_name, session_id=session)
        except IntegrityError:
            continue  # the other call created it: read it
    raise _HeadMoved(session)


def _session_start(user: Any, session: str, messages: list[Msg], hashes: list[str], agent_type: str,
                   model_name: str) -> ThreadResult:
    """A conversation the session's chains do not hold: the first of its agent type gets that agent's
    (new, empty) chain; a later one of a type already there continues that agent in a successor chain."""
    with transaction.atomic():
        flow = _session_flow(user, session, _title(messages), model_name)
        agent = flow.agents.filter(agent_type=agent_type).order_by("pk").first()
        if agent is None:
            agent = agent_create(flow=flow, agent_type=agent_type)
            transaction.on_commit(lambda: _announce_agent(flow.pk, agent), robust=True)
        chain = _locked(agent.chains.get(is_active=True).pk)
        if not chain.last_seq:
            _append_all(chain, messages, [], **_head(hashes, messages, len(messages)))
            return ThreadResult(chain=chain, appended=len(messages), head_hash=hashes[-1])
    return _rewrite(chain, messages, hashes,
                    why=f"the {agent_type} agent of session {session[:80]!r} started a new conversation")


def _announce_agent(flow_id: int, agent: Agent) -> None:
    """The flow's other active chains hear that `agent` joined (an open flow page listens to them)."""
    new_chain = agent.chains.get(is_active=True).pk
    siblings = Chain.objects.filter(agent__flow_id=flow_id, is_active=True).exclude(pk=new_chain)
    for chain_id in siblings.values_list("pk", flat=True)[:MAX_ANNOUNCED_CHAINS]:
        event: FlowAgentAddedEvent = {"type": "flow.agent_added", "chain_id": chain_id, "flow_id": flow_id,
                                      "agent_type": agent.agent_type, "new_chain_id": new_chain}
        broadcast(chain_id, event)


def _rewrite(previous: Chain, messages: list[Msg], hashes: list[str], why: str = "") -> ThreadResult:
    """Archive `previous` unchanged and continue in a successor holding the rewritten history (or, `why`
    says, the agent's new conversation)."""
    with transaction.atomic():
        old = Chain.objects.select_for_update().get(pk=previous.pk)
        if not old.is_active:
            raise _HeadMoved(old.pk)
        Chain.objects.filter(pk=old.pk).update(is_active=False, updated_at=timezone.now())
        created = Chain.objects.create(agent_id=old.agent_id, parent=old, compactions=old.compactions,
                                       tool_call_id_template=old.tool_call_id_template)
        chain = _locked(created.pk)
        _append_all(chain, messages, [], **_head(hashes, messages, len(messages)))
        event = _rewrite_event(old, chain, len(messages), why)
        transaction.on_commit(lambda: _announce_rewrite(old, chain, event.pk, len(messages)), robust=True)
    return ThreadResult(chain=chain, appended=len(messages), head_hash=hashes[-1], rewritten_from=old.pk)


def _announce_rewrite(old: Chain, chain: Chain, event_id: int, kept: int) -> None:
    """Both chains' pages learn where the history went on."""
    for chain_id in (old.pk, chain.pk):
        event: ChainRewrittenEvent = {"type": "chain.rewritten", "chain_id": chain_id, "successor_id": chain.pk,
                                      "event_id": event_id, "messages_before": old.last_seq, "messages_after": kept}
        broadcast(chain_id, event)


def _rewrite_event(old: Chain, chain: Chain, kept: int, why: str = "") -> SummaryEvent:
    now = timezone.now()
    why = why or "the agent rewrote its history (its own summarization)"
    return SummaryEvent.objects.create(
        chain=chain, trigger=Trigger.CLIENT_REWRITE, outcome=Outcome.OK, raw_seq_to=chain.last_seq,
        reason=f"{why}: {old.last_seq} messages in chain #{old.pk} became {kept}; continued in successor "
               f"chain #{chain.pk}",
        bytes_before=active_bytes(old), bytes_after=active_bytes(chain), model=_flow_of(chain).model_name,
        finished_at=now)


def _flow_of(chain: Chain) -> Flow:
    return Agent.objects.select_related("flow").get(pk=chain.agent_id).flow


def gateway_answer_append(*, chain_id: int, expected_head: str, message: Msg,
                          history: list[Msg] | None = None, after_seq: int | None = None,
                          queue_summary: bool = True) -> int | None:
    """Append the model's answer; None (nothing written) when the chain moved on meanwhile.

    `history` is the request's messages, which the chain held when the call was threaded: with it, pairing is
    checked in memory (the head hash proves the chain still holds exactly them). `after_seq` is the chain's
    last seq then: when the agent's next request got in first and brought the answer itself (it went out
    before its record was written), the answer is found there and its seq returned. `queue_summary=False`
    (manage mode): the turn is not queued for the after-turn run; the next request summarizes it.
    """
    with transaction.atomic(savepoint=False):  # no savepoint inside gateway_call_complete's transaction
        chain = _locked(chain_id)
        if not chain.is_active or chain.head_hash != expected_head or chain.head_seq != chain.last_seq:
            return _brought_by_agent(chain_id, after_seq, message)
        chain_append_locked(chain=chain, batch=batch_validate([message]),
                            prior=_history_in_hand(chain, history) if history is not None else None,
                            head_hash=extend_hash(expected_head, message), head_seq=chain.last_seq + 1,
                            queue_summary=queue_summary)
    return chain.last_seq


def _brought_by_agent(chain_id: int, after_seq: int | None, message: Msg) -> int | None:
    """The seq of `message` when the chain holds it right after `after_seq` (the agent resent it)."""
    if after_seq is None:
        return None
    row = Message.objects.filter(chain_id=chain_id, seq=after_seq + 1).first()
    return row.seq if row is not None and message_digest(row.to_dict()) == message_digest(message) else None
