"""How far a provider's token count is from ours, per provider and model, learned from what it reports.

Our counts are tiktoken's; a provider may count other tokens (another tokenizer, per-message overhead, how it
renders tools). Every successful call reports `prompt_tokens`; every context-overflow error quotes the count
that overflowed. Their ratio to our estimate of the same request is kept per provider and model as a running
mean of the last `WINDOW_SAMPLES` answers (an overflow's ratio is taken at once when it is higher: it proved
that we counted too low), and the fit of the next request uses it (`flows.pipeline.RequestNeeds.ratio`), so the
request after a mismatch already fits. Ratios outside MIN_RATIO..MAX_RATIO are measurement errors (a cached
prompt, a usage of something else) and are ignored.
"""
from __future__ import annotations

from django.db import IntegrityError, transaction

from flows.config.table_copy import KeyedCopy
from flows.models import ProviderConfig, TokenRatio

__all__ = ["token_ratio_for", "token_ratio_learn", "WINDOW_SAMPLES", "MIN_RATIO", "MAX_RATIO"]

WINDOW_SAMPLES = 10
MIN_RATIO, MAX_RATIO = 0.5, 4.0
MIN_SAMPLE_TOKENS = 32  # a tiny request's ratio is mostly fixed overhead: it says nothing about the tokenizer


# Ratios as last read or learned in this process, per (provider id, model), see table_copy: every gateway call
# needs one, and this process learns most of them itself (`put` once committed).
RATIOS: KeyedCopy[tuple[int | None, str], float] = KeyedCopy(TokenRatio, "token_ratios")


def token_ratio_for(provider: ProviderConfig | None, model: str) -> float:
    """The learned ratio (provider tokens per token of ours), 1.0 when nothing was learned yet."""
    def read() -> float:
        found = TokenRatio.objects.filter(provider=provider, model=model[:200]).values_list("ratio", flat=True).first()
        return float(found) if found is not None else 1.0

    return RATIOS.get((provider.pk if provider is not None else None, model[:200]), read)


def token_ratio_learn(provider: ProviderConfig | None, model: str, *, ours: int, reported: int,
                      overflow: bool = False) -> float | None:
    """Fold one observation in; the new ratio, or None when the observation was ignored."""
    if ours < MIN_SAMPLE_TOKENS or reported <= 0:
        return None
    sample = reported / ours
    if not MIN_RATIO <= sample <= MAX_RATIO:
        return None
    try:
        ratio = _fold(provider, model[:200], sample, overflow)
    except IntegrityError:  # another call created the row at the same moment: fold into theirs
        ratio = _fold(provider, model[:200], sample, overflow)
    key = (provider.pk if provider is not None else None, model[:200])
    transaction.on_commit(lambda: RATIOS.put(key, ratio))  # once committed, this process's next call uses it
    return ratio


def _fold(provider: ProviderConfig | None, model: str, sample: float, overflow: bool) -> float:
    with transaction.atomic():
        row = TokenRatio.objects.select_for_update().filter(provider=provider, model=model).first()
        if row is None:
            row = TokenRatio.objects.create(provider=provider, model=model, ratio=sample, samples=1)
            return row.ratio
        weight = min(row.samples, WINDOW_SAMPLES - 1)
        mean = (row.ratio * weight + sample) / (weight + 1)
        row.ratio = max(mean, sample) if overflow else mean
        row.samples += 1
        row.save(update_fields=["ratio", "samples", "updated_at"])
        return row.ratio
