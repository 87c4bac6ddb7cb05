"""Migration 0011: existing chains get the running token total their messages add up to."""
from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("flows", "0010_gateway_summarize_ms")]
AFTER = [("flows", "0011_chain_raw_tokens")]


def _migrate(targets: list[tuple[str, str]]) -> object:
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@pytest.mark.django_db(transaction=True)
def test_existing_chains_get_their_messages_token_total_and_unknown_stays_unknown() -> None:
    apps = _migrate(BEFORE)
    try:
        user = apps.get_model("auth", "User").objects.create(username="old")
        agent = apps.get_model("flows", "Agent").objects.create(
            flow=apps.get_model("flows", "Flow").objects.create(owner=user, title="old"))
        Chain, Message = apps.get_model("flows", "Chain"), apps.get_model("flows", "Message")
        counted, unknown, empty = (Chain.objects.create(agent=agent, is_active=False) for _ in range(3))
        for seq, tokens in enumerate((12, 30), start=1):
            Message.objects.create(chain=counted, seq=seq, role="user", content="x", token_count=tokens)
        Message.objects.create(chain=unknown, seq=1, role="user", content="x", token_count=None)
        apps = _migrate(AFTER)
        totals = dict(apps.get_model("flows", "Chain").objects.values_list("pk", "raw_tokens"))
        assert totals == {counted.pk: 42, unknown.pk: None, empty.pk: 0}
    finally:
        _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
