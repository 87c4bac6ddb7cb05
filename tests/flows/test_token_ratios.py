"""The provider/tiktoken token ratio, learned per provider and model from usage and overflow errors."""
from __future__ import annotations

import pytest

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
