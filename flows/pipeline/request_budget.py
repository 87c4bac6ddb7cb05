"""The room a request's messages may take in the window: the window minus what else the provider counts.

A provider counts more than the messages: the tool schemas, a structured-output schema, and the output the
request reserves (`max_tokens` / `max_completion_tokens` / `max_output_tokens`). Each wire format counts
its own extras (`RequestNeeds`, our tiktoken count); the provider's tokenizer differs from ours by a ratio
learned from the usage it reports (`flows.config.token_ratio_for`). With ratio r, extras E, reserve R and
window W the messages fit when r * (view + E) + R <= W, so the view may take (W - R) / r - E of our tokens.

The reserve is the request's own output cap when it gives one, but never more than half of what the extras
leave (a request asking 4,000 output tokens of a 6,000-token window with 4,300 tokens of tools still gets its
view fitted; its cap is then clamped to what is left, `output_cap`). A cap is never clamped below
`MIN_OUTPUT_TOKENS` (or the request's own smaller cap): a request that cannot keep that much free cannot fit.
Pure arithmetic: no database, no model (the ratio's bounds are the learner's, `flows.config`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from flows.config import MAX_RATIO, MIN_RATIO

__all__ = ["RequestNeeds", "Budget", "fit_budget", "MIN_OUTPUT_TOKENS"]

MIN_OUTPUT_TOKENS = 256  # the floor of a clamped max output: less is no useful answer for an agent


@dataclass(frozen=True)
class RequestNeeds:
    """What a request needs besides its messages, counted by its wire format with our tokenizer."""

    tools: int = 0  # the tool schemas, as the provider renders them
    schema: int = 0  # a structured-output schema (response_format, text.format)
    max_output: int | None = None  # the request's own output cap, when it gives one
    ratio: float = 1.0  # provider tokens per token of ours for this provider and model (learned)
    provider: str = ""  # the provider the request is routed to (its name): whose window the fit uses
    model: str = ""  # the model id it asks that provider for

    @property
    def extra(self) -> int:
        return self.tools + self.schema


@dataclass(frozen=True)
class Budget:
    """The window split for one request. `reserve` is what the fit keeps free for the answer."""

    window: int
    reserve: int
    needs: RequestNeeds

    @property
    def ratio(self) -> float:
        return min(max(self.needs.ratio, MIN_RATIO), MAX_RATIO)

    @property
    def view_target(self) -> int:
        """Our tokens the messages may take."""
        return math.floor((self.window - self.reserve) / self.ratio) - self.needs.extra

    def prompt(self, view_tokens: int) -> int:
        """The provider's count of the whole prompt (messages + extras), estimated with the ratio."""
        return math.ceil((view_tokens + self.needs.extra) * self.ratio)

    def left(self, view_tokens: int) -> int:
        """Tokens the window leaves for the answer after this view."""
        return self.window - self.prompt(view_tokens)

    @property
    def floor(self) -> int:
        """The least output a request must keep free: the floor, or the request's own smaller cap."""
        asked = self.needs.max_output
        return min(asked, MIN_OUTPUT_TOKENS) if asked is not None else min(self.reserve, MIN_OUTPUT_TOKENS)

    def fits(self, view_tokens: int) -> bool:
        return self.left(view_tokens) >= self.floor

    def output_cap(self, view_tokens: int) -> int | None:
        """The max output to send: the request's own, clamped to what the view leaves; None when not given."""
        asked = self.needs.max_output
        return None if asked is None else max(min(asked, self.left(view_tokens)), 0)


def fit_budget(window: int, default_reserve: int, needs: RequestNeeds | None) -> Budget:
    """The budget of a request in a window whose settings reserve `default_reserve` for the answer."""
    needs = needs or RequestNeeds()
    if needs.max_output is None:
        return Budget(window=window, reserve=default_reserve, needs=needs)
    ratio = min(max(needs.ratio, MIN_RATIO), MAX_RATIO)
    available = window - math.ceil(needs.extra * ratio)
    reserve = min(needs.max_output, max(available // 2, min(needs.max_output, MIN_OUTPUT_TOKENS)))
    return Budget(window=window, reserve=max(reserve, 0), needs=needs)
