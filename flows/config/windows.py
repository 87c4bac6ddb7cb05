"""Writes to what a deployment knows about its models: context windows (`ModelWindow`) and endpoints."""
from __future__ import annotations

from flows.models import ModelWindow, ProviderConfig, ProviderKind

__all__ = ["model_window_ensure", "provider_endpoint_ensure", "provider_endpoint_remove"]


def model_window_ensure(*, model: str, context_window: int, max_output_tokens: int | None = None,
                        source: str = "admin") -> ModelWindow:
    """The model's window row, created with these values when missing; an existing row (an admin's) wins."""
    row, _ = ModelWindow.objects.get_or_create(model=model, defaults={
        "context_window": context_window, "max_output_tokens": max_output_tokens, "source": source})
    return row


def provider_endpoint_ensure(*, name: str, base_url: str, model: str) -> ProviderConfig:
    """The OpenAI-compatible provider `name`, (re)pointed at `base_url`; never made the default.

    The demo's scripted model listens on a new loopback port at every start, so its row follows it."""
    provider, _ = ProviderConfig.objects.update_or_create(name=name, defaults={
        "kind": ProviderKind.OPENAI, "base_url": base_url, "model": model})
    return provider


def provider_endpoint_remove(*, name: str) -> None:
    """Forget a provider a process made for itself (the foreground demo's scripted model) when it ends."""
    ProviderConfig.objects.filter(name=name, is_default=False).delete()
