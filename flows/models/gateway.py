"""What the gateway (`/v1/`) records: one row per model call, and Responses API answers by our own id."""
from __future__ import annotations

from django.conf import settings
from django.db import models

from flows.models.chains import SAFE_JSON, Chain
from flows.models.fields import storable_text_field


class GatewayMode(models.TextChoices):
    OBSERVE = "observe", "observe: forward the request untouched, record everything"
    MANAGE = "manage", "manage: forward the summarized view fitted to the window"


class CallStatus(models.TextChoices):
    RUNNING = "running"
    OK = "ok"
    UPSTREAM_ERROR = "upstream_error"  # the upstream answered with an error status (passed through)
    FAILED = "failed"  # the upstream was down, too slow, answered garbage or closed mid-stream
    CANCELLED = "cancelled"  # the agent hung up before the answer was complete


class GatewayCall(models.Model):
    """One model call through the gateway: what went upstream, what came back, usage, cost and latency.

    `sent_messages` is empty when what went upstream is exactly a stored state: the view version
    `sent_view_version` followed by the raw messages up to `sent_raw_seq_to` (manage mode), or the raw chain up
    to `sent_raw_seq_to` (observe mode, `sent_view_version` null). Otherwise (pruned, retried after an overflow)
    it holds the exact list, so "sent to the model" is always reproducible.
    """

    chain = models.ForeignKey(Chain, on_delete=models.CASCADE, related_name="gateway_calls")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    provider = models.ForeignKey("flows.ProviderConfig", null=True, blank=True, on_delete=models.SET_NULL,
                                 related_name="+")
    model = models.CharField(max_length=200, blank=True, default="")
    mode = models.CharField(max_length=8, choices=GatewayMode.choices, default=GatewayMode.MANAGE)
    stream = models.BooleanField(default=False)
    status = models.CharField(max_length=16, choices=CallStatus.choices, default=CallStatus.RUNNING)
    http_status = models.IntegerField(default=0, help_text="status returned to the agent")
    request_messages = models.IntegerField(default=0, help_text="messages in the agent's request")
    appended = models.IntegerField(default=0, help_text="new raw messages the request added to the chain")
    sent_view_version = models.IntegerField(null=True, blank=True)
    sent_raw_seq_to = models.IntegerField(default=0)
    sent_messages = models.JSONField(null=True, blank=True, **SAFE_JSON)
    sent_message_count = models.IntegerField(default=0)
    sent_tokens = models.IntegerField(default=0, help_text="our estimate of the prompt tokens sent upstream")
    response_message = models.JSONField(null=True, blank=True, **SAFE_JSON)
    response_seq = models.IntegerField(null=True, blank=True, help_text="raw seq of the appended answer")
    usage = models.JSONField(null=True, blank=True, help_text="the provider's usage object")
    cost_usd = models.FloatField(default=0.0)
    attempts = models.IntegerField(default=1, help_text="upstream requests (more than 1 after overflow retries)")
    latency_ms = models.IntegerField(default=0)
    summarize_ms = models.IntegerField(default=0, help_text="of latency_ms: summarizing and fitting the view on the "
                                                            "request path (manage mode, overflow retries)")
    first_byte_ms = models.IntegerField(null=True, blank=True)
    request_params = models.JSONField(default=dict, blank=True, help_text="the request as the agent sent it, without "
                                      "its messages: parameters, tools, stream, session and agent headers",
                                      **SAFE_JSON)
    phases = models.JSONField(default=dict, blank=True, help_text="milliseconds: wait_ms (for the caller's previous "
                              "record), admitted_at_ms (admission done, from arrival), record_ms (the record's write)")
    budget = models.JSONField(null=True, blank=True, help_text="how the request was fitted: window and its source, "
                              "tokens of messages, tools and schema, the learned ratio, max output asked and sent")
    error = storable_text_field(blank=True, default="")
    request_hash = models.CharField(max_length=64, blank=True, default="", db_index=True,
                                    help_text="prefix hash of the request's messages (flows/gateway/prefixes.py)")
    retry_of = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="retries",
                                 help_text="the earlier call that sent the same messages (an SDK retry, a replay)")
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["chain_id", "id"]

    def __str__(self) -> str:
        return f"gateway call #{self.pk} ({self.mode}, {self.status})"


class AgentLoop(models.Model):
    """An agent repeating one tool call (same name and arguments), seen by the gateway: one row per episode,
    its count growing while the call keeps coming back (flows/gateway/loops.py)."""

    chain = models.ForeignKey(Chain, on_delete=models.CASCADE, related_name="loops")
    call = models.ForeignKey(GatewayCall, null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
                             help_text="the gateway call whose answer repeated it last")
    tool_name = models.CharField(max_length=200)
    arguments = models.TextField(blank=True, default="", help_text="the repeated arguments (canonical JSON)")
    repeats = models.IntegerField(help_text="times in a row, or within the window when not in a row")
    in_a_row = models.BooleanField(default=True)
    window = models.IntegerField(default=0, help_text="the loop_window setting it was counted in")
    first_seq = models.IntegerField(help_text="raw seq of the first repetition counted")
    last_seq = models.IntegerField(help_text="raw seq of the latest repetition")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["chain_id", "id"]

    def __str__(self) -> str:
        return f"loop of {self.tool_name} x{self.repeats} in chain #{self.chain_id}"


class GatewayResponse(models.Model):
    """An OpenAI Responses answer (`/v1/responses`) under our own id: whose it is, where it sits, what it stands for.

    The agent only ever sees `response_id` (ours); `upstream_id` is the upstream's id for the same answer
    (usable as the upstream's `previous_response_id` only when `upstream_stored`). The conversation through
    this answer is the raw messages of `chain` up to `seq_to` when they hash to `history_hash` (the prefix hash
    of the agent's conversation through its output, see flows/gateway/prefixes.py), so a stateful client's
    `previous_response_id` resolves without the agent resending anything. `body` is the response object as the
    agent got it; a DELETE sets `deleted_at` (the chain's messages are never deleted: raw history is kept).
    """

    response_id = models.CharField(max_length=64, unique=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    call = models.OneToOneField(GatewayCall, on_delete=models.CASCADE, related_name="response")
    chain = models.ForeignKey(Chain, on_delete=models.CASCADE, related_name="+")
    seq_to = models.IntegerField(help_text="raw seq of the conversation's last message through this response")
    history_hash = models.CharField(max_length=32, help_text="prefix hash of the conversation through its output")
    upstream_id = models.CharField(max_length=200, blank=True, default="")
    upstream_stored = models.BooleanField(default=False, help_text="the upstream keeps it (store was not false)")
    body = models.JSONField(**SAFE_JSON)
    created_at = models.DateTimeField(auto_now_add=True)
    deleted_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"response {self.response_id} (call #{self.call_id})"
