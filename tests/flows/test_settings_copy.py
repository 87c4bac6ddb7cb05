"""settings_for outside transactions: a per-process copy per (profile, flow), dropped by edits in this process."""
from __future__ import annotations

from typing import Any

import pytest
from django.db import transaction

from flows.config import settings_for, settings_save, table_copy
from flows.config.registry import SETTINGS
from flows.ingest import flow_create
from flows.models import SummarizerSettings

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def flow(user: Any) -> Any:
    SETTINGS.drop()
    return flow_create(owner=user, title="copy", model_name="gpt-4o")


def test_an_edit_through_this_process_is_seen_at_once_another_process_within_the_copy_time(
        flow: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    assert settings_for(profile="agent", flow=flow).last_sec_bytes != 12345
    settings_save(profile="agent", flow=flow, data={"last_sec_bytes": 12345}, source="api")  # a flow override
    assert settings_for(profile="agent", flow=flow).last_sec_bytes == 12345
    SummarizerSettings.objects.filter(flow=flow).update(last_sec_bytes=23456)  # another process: no signal
    assert settings_for(profile="agent", flow=flow).last_sec_bytes == 12345
    monkeypatch.setattr(table_copy, "TABLE_COPY_SECONDS", 0.0)
    assert settings_for(profile="agent", flow=flow.pk).last_sec_bytes == 23456


def test_a_caller_changing_its_row_does_not_change_the_copy(flow: Any) -> None:
    row = settings_for(profile="agent", flow=flow)
    kept = row.max_bp_bytes
    row.max_bp_bytes = kept + 1  # never saved
    assert settings_for(profile="agent", flow=flow).max_bp_bytes == kept


def test_inside_a_transaction_the_table_is_read(flow: Any) -> None:
    settings_for(profile="agent", flow=flow)  # in the copy now
    with transaction.atomic():
        SummarizerSettings.objects.filter(flow__isnull=True, profile="agent").update(last_sec_bytes=34567)
        assert settings_for(profile="agent", flow=flow).last_sec_bytes == 34567
        transaction.set_rollback(True)
    assert settings_for(profile="agent", flow=flow).last_sec_bytes != 34567


def test_the_copy_stays_bounded_however_many_flows_it_serves(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(table_copy, "KEYED_COPY_MAX_KEYS", 3)
    SETTINGS.drop()
    for flow_id in range(10):
        assert settings_for(profile="agent", flow=flow_id + 10_000).profile == "agent"  # no such flows: defaults
    assert len(SETTINGS._values) <= 3
