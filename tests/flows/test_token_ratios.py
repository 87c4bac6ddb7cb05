"""The provider/tiktoken token ratio, learned per provider and model from usage and overflow errors."""
from __future__ import annotations

import pytest
from django.db import transaction

from flows.config import token_ratio_for, token_ratio_learn
from flows.models import ProviderConfig

pytestmark = pytest.mark.django_db


@pytest.fixture
def provider() -> ProviderConfig:
    return ProviderConfig.objects.create(name="ratio-p", base_url="http://127.0.0.1:9/v1", model="m")


def test_nothing_learned_is_a_ratio_of_one(provider: ProviderConfig) -> None:
    assert token_ratio_for(provider, "m") == 1.0


def test_usage_teaches_a_running_mean_per_provider_and_model(provider: ProviderConfig) -> None:
    token_ratio_learn(provider, "m", ours=1000, reported=1200)
    token_ratio_learn(provider, "m", ours=1000, reported=1100)
    assert token_ratio_for(provider, "m") == pytest.approx(1.15)
    assert token_ratio_for(provider, "other") == 1.0 and token_ratio_for(None, "m") == 1.0


def test_an_overflow_proves_we_counted_low_and_is_taken_at_once(provider: ProviderConfig) -> None:
    for _ in range(5):
        token_ratio_learn(provider, "m", ours=1000, reported=1000)
    assert token_ratio_learn(provider, "m", ours=1000, reported=1400, overflow=True) == pytest.approx(1.4)


@pytest.mark.parametrize("ours, reported", [(10, 30), (1000, 0), (1000, 100), (1000, 9000)])
def test_tiny_requests_and_absurd_ratios_are_ignored(provider: ProviderConfig, ours: int, reported: int) -> None:
    assert token_ratio_learn(provider, "m", ours=ours, reported=reported) is None
    assert token_ratio_for(provider, "m") == 1.0


@pytest.mark.django_db(transaction=True)
def test_outside_transactions_a_ratio_learned_here_is_used_at_once_and_another_process_is_seen_later(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from flows.config import table_copy
    from flows.models import TokenRatio

    provider = ProviderConfig.objects.create(name="ratio-copy", base_url="http://127.0.0.1:9/v1", model="m")
    assert token_ratio_for(provider, "m") == 1.0  # read (nothing learned) and remembered
    with transaction.atomic():  # as the gateway's call record learns it: remembered once committed
        token_ratio_learn(provider, "m", ours=1000, reported=1300)
    assert token_ratio_for(provider, "m") == pytest.approx(1.3)
    TokenRatio.objects.filter(provider=provider, model="m").update(ratio=2.0)  # another process's write
    assert token_ratio_for(provider, "m") == pytest.approx(1.3)
    monkeypatch.setattr(table_copy, "TABLE_COPY_SECONDS", 0.0)
    assert token_ratio_for(provider, "m") == pytest.approx(2.0)


@pytest.mark.django_db(transaction=True)
def test_a_ratio_learned_in_a_transaction_rolled_back_is_not_remembered() -> None:
    provider = ProviderConfig.objects.create(name="ratio-rollback", base_url="http://127.0.0.1:9/v1", model="m")
    assert token_ratio_for(provider, "m") == 1.0
    with pytest.raises(RuntimeError), transaction.atomic():
        token_ratio_learn(provider, "m", ours=1000, reported=1300)
        raise RuntimeError("the call's record failed")
    assert token_ratio_for(provider, "m") == 1.0
