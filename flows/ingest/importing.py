"""Import a transcript (OpenAI JSON, PentAGI msgchain JSON, OpenClaw JSONL) as a new flow, all or nothing."""
from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Count, Max, Q
from django.utils import timezone

from flows.engine import FormatError, import_chain
from flows.ingest.append import MAX_IMPORT_MESSAGES, after_append, build_rows, id_template, tokens_after, validate_batch
from flows.ingest.create import agent_create, flow_create
from flows.ingest.pairing import Tail, check_pairing
from flows.models import Chain, Flow, Message, Profile

__all__ = ["IMPORT_CHUNK_ROWS", "IMPORT_STALLED_SECONDS", "transcript_validate", "chain_import",
           "imports_remove_interrupted"]

IMPORT_CHUNK_ROWS = 1000  # rows per import transaction: SQLite's write lock is released between chunks
# A running import commits a chunk every second or so; one whose newest row is this old died (a killed server).
IMPORT_STALLED_SECONDS = 300.0


def transcript_validate(messages: Any) -> list[dict[str, Any]]:
    """Check a whole transcript as a new chain would (shape, order, tool pairing) without writing anything.

    A live replay appends it turn by turn later; checking it all first means it never stops half-way.
    """
    batch = validate_batch(messages, MAX_IMPORT_MESSAGES)
    check_pairing(Tail(empty=True, calls={}, answered=set(), open_pair=False), batch)
    return batch


def chain_import(*, owner, data: Any, fmt: str | None = None, title: str = "", model_name: str = "",
                 agent_type: str = "primary_agent", profile: str = Profile.AGENT) -> Chain:
    """A new flow + agent + chain holding an imported transcript; all or nothing. Raises FormatError/AppendError."""
    messages = import_chain(data, fmt)
    if not messages:
        raise FormatError("the file holds no messages")
    if not model_name and isinstance(data, dict) and isinstance(data.get("model"), str):
        model_name = data["model"]
    batch = validate_batch(messages, MAX_IMPORT_MESSAGES)
    check_pairing(Tail(empty=True, calls={}, answered=set(), open_pair=False), batch)
    with transaction.atomic():
        flow = flow_create(owner=owner, title=title or "Imported chain", model_name=model_name)
        agent = agent_create(flow=flow, agent_type=agent_type, profile=profile)
        chain = agent.chains.get(is_active=True)
    try:
        _import_rows(chain, batch, model_name)
    except BaseException:
        flow.delete()  # all or nothing: the rows written so far go with their flow
        raise
    return chain


def _import_rows(chain: Chain, batch: list[dict[str, Any]], model: str) -> None:
    """Write an import in chunks, each its own short transaction, then queue the chain's summarization.

    An import is a finished history whatever its last message (half the corpus ends on a user's request):
    no agent turn will ever complete it, so waiting for one left the chain without a view until a restart.

    On SQLite a transaction holds the database's only write lock: a 20,000-message import in one transaction
    (token counting included) held it for tens of seconds, and every append, page save and summarization
    waited. Rows are measured before any transaction; the chain's last_seq moves (and the page hears of the
    messages) only in the final step, once every chunk is in.
    """
    rows = build_rows(chain, batch, {}, model)
    for start in range(0, len(rows), IMPORT_CHUNK_ROWS):
        with transaction.atomic():
            Message.objects.bulk_create(rows[start:start + IMPORT_CHUNK_ROWS])
    tokens = tokens_after(0, rows)
    with transaction.atomic():
        template = id_template(chain, batch)
        Chain.objects.filter(pk=chain.pk).update(last_seq=len(rows), tool_call_id_template=template,
                                                 raw_tokens=tokens, updated_at=timezone.now())
        transaction.on_commit(lambda: after_append(chain.pk, rows, True), robust=True)
    chain.last_seq, chain.tool_call_id_template, chain.raw_tokens = len(rows), template, tokens


def imports_remove_interrupted(*, now: datetime | None = None,
                               stalled_after_seconds: float = IMPORT_STALLED_SECONDS) -> int:
    """Delete the flows of imports a killed process left half-written; returns how many.

    Only an import writes rows past its chain's `last_seq` (every append moves both in one transaction), and it
    moves `last_seq` once, after its last chunk. A chain still at `last_seq=0` holding rows whose newest is
    older than `stalled_after_seconds` is such a remnant: its flow (made for the import, nothing else in it)
    goes, all or nothing, as if the import had failed in the process (`chain_import` deletes it then).
    """
    cutoff = (now or timezone.now()) - timedelta(seconds=stalled_after_seconds)
    stalled = (Chain.objects.filter(last_seq=0).annotate(rows=Count("messages"), newest=Max("messages__created_at"))
               .filter(rows__gt=0, newest__lte=cutoff).values_list("agent__flow_id", flat=True))
    flows = Flow.objects.filter(pk__in=list(stalled)).annotate(
        written=Count("agents__chains", filter=Q(agents__chains__last_seq__gt=0)))
    doomed = list(flows.filter(written=0).values_list("pk", flat=True))
    if doomed:
        Flow.objects.filter(pk__in=doomed).delete()
    return len(doomed)
