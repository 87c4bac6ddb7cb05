"""Writes to the admin's model windows (`ModelWindow`): what a deployment knows about a model's context size."""
from __future__ import annotations

from flows.models import ModelWindow

__all__ = ["model_window_ensure"]


def model_window_ensure(*, model: str, context_window: int, max_output_tokens: int | None = None,
                        source: str = "admin") -> ModelWindow:
    """The model's window row, created with these values when missing; an existing row (an admin's) wins."""
    row, _ = ModelWindow.objects.get_or_create(model=model, defaults={
        "context_window": context_window, "max_output_tokens": max_output_tokens, "source": source})
    return row
