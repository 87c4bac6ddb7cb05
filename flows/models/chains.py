"""Flows, agents, chains and the append-only raw history, plus the views the model receives."""
from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models

from flows.models.fields import NulSafeJSONDecoder, NulSafeJSONEncoder, storable_json_field, storable_text_field

# Agent text may contain NUL characters, which PostgreSQL's jsonb refuses: store them escaped (see fields.py).
SAFE_JSON = {"encoder": NulSafeJSONEncoder, "decoder": NulSafeJSONDecoder}

# PentAGI's agent types (its prompt templates), the primary agent first: the type of an agent nobody named.
AGENT_TYPES = [
    "primary_agent", "pentester", "coder", "installer", "searcher", "memorist", "enricher",
    "generator", "refiner", "reporter", "adviser", "reflector", "assistant", "summarizer", "tool_call_fixer",
]
SESSION_ID_CHARS = 200  # the longest session id an agent may send (X-Session-Id and its kin, or /s/<id>/v1/)
ROLES = ["system", "user", "assistant", "tool"]
# The message keys that have their own column; any other key of a message is kept in Message.extra.
MESSAGE_COLUMNS = ("role", "content", "tool_calls", "tool_call_id", "name", "reasoning")


class AppendOnlyError(RuntimeError):
    """Raised when code tries to change or delete stored history."""


class FlowStatus(models.TextChoices):
    CREATED = "created"
    RUNNING = "running"
    WAITING = "waiting"
    FINISHED = "finished"
    FAILED = "failed"


class Profile(models.TextChoices):
    AGENT = "agent"
    ASSISTANT = "assistant"


def sees_every_flow(user: Any) -> bool:
    """Staff see every flow, others their own. The visibility rule's one question about the reader besides its id
    (the append's compiled lock read is kept per answer: flows/ingest/chain_lock.py)."""
    return bool(user.is_staff)


class FlowQuerySet(models.QuerySet):
    def visible_to(self, user: Any) -> FlowQuerySet:
        """Who may see a flow, the one rule every reader applies: staff see every flow, others their own."""
        return self if sees_every_flow(user) else self.filter(owner=user)


class Flow(models.Model):
    title = models.CharField(max_length=200)
    status = models.CharField(max_length=16, choices=FlowStatus.choices, default=FlowStatus.CREATED)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="flows")
    model_name = models.CharField(max_length=200, blank=True, default="",
                                  help_text="Model the agents call, e.g. gpt-4o; decides the context window.")
    provider = models.ForeignKey("flows.ProviderConfig", null=True, blank=True, on_delete=models.SET_NULL,
                                 related_name="flows", help_text="Endpoint used for summaries; empty = default.")
    # The gateway puts every call of one agent run that names a session (X-Session-Id, /s/<id>/v1/...) into
    # the owner's flow of that session: unique per owner, so a session id never joins two users' calls.
    session_id = models.CharField(max_length=SESSION_ID_CHARS, blank=True, default="",
                                  help_text="the agent run's session id at the gateway; empty = none")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = FlowQuerySet.as_manager()

    class Meta:
        ordering = ["-updated_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["owner", "session_id"], condition=~models.Q(session_id=""),
                                    name="one_flow_per_owner_session"),
        ]

    def __str__(self) -> str:
        return f"{self.title} (#{self.pk})"


class Agent(models.Model):
    flow = models.ForeignKey(Flow, on_delete=models.CASCADE, related_name="agents")
    agent_type = models.CharField(max_length=32, choices=[(t, t) for t in AGENT_TYPES])
    profile = models.CharField(max_length=16, choices=Profile.choices, default=Profile.AGENT)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.agent_type} #{self.pk}"


class ChainQuerySet(models.QuerySet):
    def visible_to(self, user: Any) -> ChainQuerySet:
        """Chains of the flows `user` may see (FlowQuerySet.visible_to), with their agent and flow loaded."""
        chains = self.select_related("agent__flow")
        return chains if sees_every_flow(user) else chains.filter(agent__flow__owner=user)


class Chain(models.Model):
    """One message chain of an agent. Successor segments (compaction §7) link to the archived parent."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="chains")
    is_active = models.BooleanField(default=True)
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="successors")
    tool_call_id_template = models.CharField(max_length=100, blank=True, default="")
    last_seq = models.IntegerField(default=0, help_text="seq of the newest raw message (0 = empty)")
    view_version = models.IntegerField(default=0, help_text="version of the newest ChainView")
    compactions = models.IntegerField(default=0)
    skipped_runs = models.IntegerField(default=0, help_text="after-turn runs that changed nothing (counted here, "
                                                            "not kept as events)")
    # The gateway threads requests into chains by hashing messages (flows/gateway/threads.py): the rolling hash
    # of the raw chain up to `head_seq`, and of its messages up to the first user message.
    head_hash = models.CharField(max_length=64, blank=True, default="", db_index=True)
    head_seq = models.IntegerField(default=0)
    root_hash = models.CharField(max_length=64, blank=True, default="", db_index=True)
    raw_tokens = models.BigIntegerField(null=True, blank=True, default=0,
                                        help_text="tokens of all raw messages (their token counts summed; empty "
                                                  "when a message has none)")
    # Coalescing (flows/ingest/append.py): set under the chain's row lock by the append that queues the after-turn
    # summarization, cleared by that run as it starts; while set, further turns queue nothing (the run loads the
    # newest state when it starts). A flag older than the sweep's cutoff is taken for a lost task (recovery).
    summary_queued_at = models.DateTimeField(null=True, blank=True,
                                             help_text="when the after-turn summarization now waiting in the queue "
                                                       "was queued (empty: none waiting)")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = ChainQuerySet.as_manager()

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["agent"], condition=models.Q(is_active=True),
                                    name="one_active_chain_per_agent"),
        ]

    def __str__(self) -> str:
        return f"chain #{self.pk}"

    def latest_view(self) -> ChainView | None:
        """The newest view: the one the model receives next (None before the first summarization)."""
        return self.views.prefetch_related("sections").order_by("-version").first()

    def raw_messages(self) -> list[dict[str, Any]]:
        """The whole raw chain in our canonical message format (what every export is built from)."""
        return [m.to_dict() for m in self.messages.order_by("seq")]

    def totals(self) -> dict[str, int]:
        """Messages, bytes and tokens of the raw chain, summed in the database."""
        agg = self.messages.aggregate(n=models.Count("id"), b=models.Sum("byte_size"), t=models.Sum("token_count"))
        return {"messages": agg["n"] or 0, "bytes": agg["b"] or 0, "tokens": agg["t"] or 0}


class Message(models.Model):
    """A raw message as the agent produced it. Never updated or deleted by normal operation."""

    chain = models.ForeignKey(Chain, on_delete=models.CASCADE, related_name="messages")
    seq = models.IntegerField(help_text="1-based, contiguous within the chain")
    role = models.CharField(max_length=16, choices=[(r, r) for r in ROLES])
    content = models.JSONField(null=True, blank=True, help_text="string, null or a list of content parts",
                               **SAFE_JSON)
    tool_calls = models.JSONField(null=True, blank=True, **SAFE_JSON)
    tool_call_id = models.CharField(max_length=200, blank=True, default="")
    name = models.CharField(max_length=200, blank=True, default="")
    reasoning = models.JSONField(null=True, blank=True, **SAFE_JSON)
    extra = models.JSONField(default=dict, blank=True, help_text="other keys of the message (e.g. OpenAI's refusal, "
                             "annotations, audio), kept verbatim for the round trip", **SAFE_JSON)
    byte_size = models.IntegerField(default=0, help_text="PentAGI size of the message (UTF-8 bytes)")
    token_count = models.IntegerField(null=True, blank=True, help_text="cached token estimate")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["chain_id", "seq"]
        constraints = [models.UniqueConstraint(fields=["chain", "seq"], name="message_seq_unique")]

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise AppendOnlyError("raw messages are append-only")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        raise AppendOnlyError("raw messages are append-only")

    def to_dict(self) -> dict[str, Any]:
        """The message in our canonical (OpenAI chat) format."""
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = self.tool_calls
        if self.role == "tool":
            out["tool_call_id"] = self.tool_call_id
        if self.name:
            out["name"] = self.name
        if self.reasoning is not None:
            out["reasoning"] = self.reasoning
        for key, value in (self.extra or {}).items():
            out.setdefault(key, value)  # never lets a stored extra shadow a column
        return out


class ChainView(models.Model):
    """A versioned snapshot of the view the model receives (never edited; a new version supersedes it)."""

    chain = models.ForeignKey(Chain, on_delete=models.CASCADE, related_name="views")
    version = models.IntegerField()
    messages = models.JSONField(default=list, **SAFE_JSON)
    lineage = models.JSONField(default=list, help_text="per view message, the raw seqs it stands for")
    raw_seq_from = models.IntegerField(default=0)
    raw_seq_to = models.IntegerField(default=0, help_text="newest raw seq this view includes")
    byte_size = models.IntegerField(default=0)
    token_count = models.IntegerField(default=0)
    settings_snapshot = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["chain_id", "version"]
        constraints = [models.UniqueConstraint(fields=["chain", "version"], name="view_version_unique")]


class ViewSection(models.Model):
    """Structure of one section of a stored view: header and body pairs (kind, size, summary flag, raw seqs).

    Named apart from the engine's AST node `summarizer.Section`, which this row describes once stored.
    """

    view = models.ForeignKey(ChainView, on_delete=models.CASCADE, related_name="sections")
    index = models.IntegerField()
    header = storable_json_field(default=dict, help_text="{'system_bytes', 'human_bytes', 'human_preview'}",
                              **SAFE_JSON)
    pairs = storable_json_field(default=list, help_text="[{'kind', 'size', 'summary', 'raw_seqs'}]")
    byte_size = models.IntegerField(default=0)

    class Meta:
        ordering = ["view_id", "index"]
        db_table = "flows_section"  # the table kept its name when the model was renamed from Section


class Trigger(models.TextChoices):
    TURN = "turn"
    WINDOW = "window"
    OVERFLOW = "overflow"
    MANUAL = "manual"
    BYTE_GUARD = "byte-guard"
    CLIENT_REWRITE = "client-rewrite"  # the agent resent a rewritten history (its own summarization)


class Outcome(models.TextChoices):
    RUNNING = "running"
    OK = "ok"
    FAILED = "failed"
    SKIPPED = "skipped"


class SummaryEventQuerySet(models.QuerySet):
    def newest_with_cost(self) -> SummaryEventQuerySet:
        """Newest first, each with what its model calls cost (`cost_usd`), how many there were (`llm_rows`) and
        the model they went to (`summarizer_model`, None when the event made no model call)."""
        return self.with_model_calls().order_by("-id")

    def with_model_calls(self) -> SummaryEventQuerySet:
        """`cost_usd`, `llm_rows` and `summarizer_model` from the event's LLMCall rows: the one source of an
        event's model figures for the events table, the event page and the API."""
        return self.annotate(cost_usd=models.Sum("llm_calls__cost_usd"), llm_rows=models.Count("llm_calls"),
                             summarizer_model=models.Max("llm_calls__model"))


class SummaryEvent(models.Model):
    """One summarization or compaction: what triggered it, what it cost and what it changed."""

    chain = models.ForeignKey(Chain, on_delete=models.CASCADE, related_name="events")
    trigger = models.CharField(max_length=16, choices=Trigger.choices)
    outcome = models.CharField(max_length=16, choices=Outcome.choices, default=Outcome.RUNNING)
    reason = storable_text_field(blank=True, default="")
    instructions = models.TextField(blank=True, default="", help_text="focus instructions of a manual compaction")
    bytes_before = models.IntegerField(default=0)
    bytes_after = models.IntegerField(default=0)
    tokens_before = models.IntegerField(default=0)
    tokens_after = models.IntegerField(default=0)
    calls = models.IntegerField(default=0)
    model = models.CharField(max_length=200, blank=True, default="")
    duration_ms = models.IntegerField(default=0)
    covered = models.JSONField(default=list, help_text="raw seq ranges [[from, to], ...] the summaries replace")
    summary_text = storable_text_field(blank=True, default="")
    retention = models.JSONField(null=True, blank=True, help_text="{'score', 'counted', 'kept', 'lost': "
                                 "[{'kind', 'value'}], 'lost_secret'}: what the new view kept of the replaced "
                                 "messages' findings and identifiers (None: nothing was replaced)", **SAFE_JSON)
    settings_snapshot = models.JSONField(default=dict)
    view = models.ForeignKey(ChainView, null=True, blank=True, on_delete=models.SET_NULL, related_name="events")
    raw_seq_to = models.IntegerField(default=0, help_text="newest raw seq the event worked on")
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = SummaryEventQuerySet.as_manager()

    class Meta:
        ordering = ["chain_id", "id"]


class MemoryNote(models.Model):
    """A durable fact saved before compaction (memory flush, compaction §8)."""

    flow = models.ForeignKey(Flow, on_delete=models.CASCADE, related_name="notes")
    chain = models.ForeignKey(Chain, null=True, blank=True, on_delete=models.SET_NULL, related_name="notes")
    event = models.ForeignKey(SummaryEvent, null=True, blank=True, on_delete=models.SET_NULL, related_name="notes")
    kind = models.CharField(max_length=32, default="identifier", help_text="identifier, credential, host, decision")
    text = storable_text_field()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["flow_id", "id"]
        constraints = [models.UniqueConstraint(fields=["flow", "kind", "text"], name="memory_note_unique")]
