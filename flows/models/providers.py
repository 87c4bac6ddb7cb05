"""Model endpoints, model windows and API tokens."""
from __future__ import annotations

import hashlib
import secrets

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models


class ProviderKind(models.TextChoices):
    EXTRACTIVE = "extractive", "offline extractive summarizer"
    OPENAI = "openai", "OpenAI-compatible endpoint"
    ANTHROPIC = "anthropic", "Anthropic-compatible endpoint (Messages API; the gateway's /v1/messages)"


class ProviderConfig(models.Model):
    """An endpoint that writes summaries. The API key is stored but never shown back in full."""

    name = models.CharField(max_length=100, unique=True)
    kind = models.CharField(max_length=16, choices=ProviderKind.choices, default=ProviderKind.EXTRACTIVE)
    base_url = models.URLField(blank=True, default="", help_text="e.g. https://api.openai.com/v1 (LLM_SERVER_URL), "
                                                                 "https://api.anthropic.com (ANTHROPIC_SERVER_URL)")
    api_key = models.CharField(max_length=500, blank=True, default="",
                               help_text="OPENAI_API_KEY / LLM_SERVER_KEY / ANTHROPIC_API_KEY (sent as x-api-key)")
    model = models.CharField(max_length=200, blank=True, default="", help_text="LLM_SERVER_MODEL")
    timeout_seconds = models.FloatField(default=60.0, validators=[MinValueValidator(1), MaxValueValidator(3600)])
    max_attempts = models.PositiveIntegerField(default=3, validators=[MinValueValidator(1), MaxValueValidator(10)])
    max_output_tokens = models.PositiveIntegerField(default=8192, validators=[MinValueValidator(16)])
    prompt_cost_per_mtok = models.FloatField(default=0.0, help_text="USD per million prompt tokens (for cost)")
    completion_cost_per_mtok = models.FloatField(default=0.0, help_text="USD per million completion tokens")
    is_default = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["is_default"], condition=models.Q(is_default=True),
                                               name="one_default_provider")]

    def __str__(self) -> str:
        return self.name

    @property
    def masked_key(self) -> str:
        if not self.api_key:
            return ""
        return "…" + self.api_key[-4:] if len(self.api_key) > 8 else "…"


class LLMCall(models.Model):
    """One call to a model endpoint made while summarizing: usage, cost, duration, outcome."""

    event = models.ForeignKey("flows.SummaryEvent", null=True, blank=True, on_delete=models.CASCADE,
                              related_name="llm_calls")
    provider = models.ForeignKey(ProviderConfig, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    model = models.CharField(max_length=200, blank=True, default="")
    prompt_bytes = models.IntegerField(default=0)
    estimated_prompt_tokens = models.IntegerField(default=0)
    prompt_tokens = models.IntegerField(null=True, blank=True, help_text="as reported by the provider")
    completion_tokens = models.IntegerField(null=True, blank=True)
    cost_usd = models.FloatField(default=0.0)
    duration_ms = models.IntegerField(default=0)
    attempts = models.IntegerField(default=1)
    ok = models.BooleanField(default=True)
    error = models.TextField(blank=True, default="")
    cached = models.BooleanField(default=False)
    prompt_text = models.TextField(blank=True, default="", help_text="the messages sent, as role: text (capped)")
    response_text = models.TextField(blank=True, default="", help_text="the model's answer (capped)")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]


class ModelWindow(models.Model):
    """A model's context window: an override (admin, env; no provider), which wins over everything, or one a
    provider's GET /v1/models reported for exactly this model id (source "discovered", with that provider)."""

    model = models.CharField(max_length=200, help_text="model id, e.g. gpt-4o or my-vllm/qwen")
    provider = models.ForeignKey(ProviderConfig, null=True, blank=True, on_delete=models.CASCADE, related_name="+",
                                 help_text="the provider that reported it (discovered windows only); empty for an "
                                           "override, which holds whichever provider serves the model")
    context_window = models.PositiveIntegerField(validators=[MinValueValidator(1024)])
    max_output_tokens = models.PositiveIntegerField(null=True, blank=True)
    source = models.CharField(max_length=32, default="admin", help_text="admin or env (overrides), or discovered "
                                                                        "(the provider's /v1/models)")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["model"]
        constraints = [
            models.UniqueConstraint(fields=["model"], condition=models.Q(provider__isnull=True),
                                    name="model_window_one_override"),
            models.UniqueConstraint(fields=["model", "provider"], condition=models.Q(provider__isnull=False),
                                    name="model_window_one_per_provider"),
        ]

    def __str__(self) -> str:
        return f"{self.model}: {self.context_window}"


class TokenRatio(models.Model):
    """How a provider's token count relates to ours for one model: its reported prompt tokens per token of our
    tiktoken estimate, learned from the usage of successful gateway calls and from overflow errors."""

    provider = models.ForeignKey(ProviderConfig, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    model = models.CharField(max_length=200)
    ratio = models.FloatField(default=1.0)
    samples = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["model"]
        constraints = [models.UniqueConstraint(fields=["provider", "model"], name="token_ratio_per_provider_model")]

    def __str__(self) -> str:
        return f"{self.model}: x{self.ratio:.3f} ({self.samples} samples)"


def hash_token(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


class ApiToken(models.Model):
    """Bearer token for agents. Only the SHA-256 is stored; the raw token is shown once at creation."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, default="agent")
    prefix = models.CharField(max_length=12, help_text="first characters, to recognise the token")
    key_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    @classmethod
    def issue(cls, *, user, name: str = "agent") -> tuple[ApiToken, str]:
        raw = "pgw_" + secrets.token_urlsafe(32)
        token = cls.objects.create(user=user, name=name, prefix=raw[:10], key_hash=hash_token(raw))
        return token, raw
