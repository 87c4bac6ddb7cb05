"""The append's compiled lock read (`flows.ingest.locked_chain`) answers as the ORM's `visible_to` query answers.

It keeps the compiled text of `Chain.objects.visible_to(...)` per kind of reader and fills in the chain's and the
reader's ids, so for every reader (none, the owner, staff, another user) and every chain (active or archived,
someone else's, missing) it must find the same chain with the same agent and flow, column for column, or find
none. Run on SQLite and (scripts/test) on PostgreSQL, where the row lock and the converters differ.
"""
from __future__ import annotations

from typing import Any

import pytest
from django.db import connection, transaction
from django.db.models import Model, Q
from django.test.utils import CaptureQueriesContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flows.ingest import AppendError, chain_append, chain_lock, locked_chain
from flows.models import Chain
from flows.models.chains import ChainQuerySet

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_compiles():
    """Each test compiles for itself (a patched rule must not meet a text kept from another test)."""
    chain_lock._COMPILED.clear()
    yield
    chain_lock._COMPILED.clear()


def _columns(obj: Model) -> dict[str, Any]:
    return {f.attname: getattr(obj, f.attname) for f in obj._meta.concrete_fields}


def _as_orm(chain_id: int, reader: Any) -> tuple[dict, dict, dict] | None:
    chains = Chain.objects.select_related("agent__flow") if reader is None else Chain.objects.visible_to(reader)
    found = chains.select_for_update(of=("self",)).filter(pk=chain_id).first()
    return None if found is None else (_columns(found), _columns(found.agent), _columns(found.agent.flow))


def _compiled(chain_id: int, reader: Any) -> tuple[dict, dict, dict] | None:
    try:
        found = locked_chain(chain_id, reader)
    except Chain.DoesNotExist:
        return None
    return _columns(found), _columns(found.agent), _columns(found.agent.flow)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(owners=st.lists(st.sampled_from(["user", "other"]), min_size=1, max_size=3),
       archived=st.lists(st.booleans(), min_size=3, max_size=3),
       reader=st.sampled_from(["none", "user", "other", "staff"]), model=st.sampled_from(["", "gpt-4o"]))
def test_every_reader_finds_what_visible_to_finds(make_chain, user, other_user, staff_user, owners, archived, reader,
                                                   model):
    people = {"user": user, "other": other_user, "staff": staff_user, "none": None}
    chains = [make_chain(owner=people[owner], model_name=model) for owner in owners]
    for chain, gone in zip(chains, archived, strict=False):
        Chain.objects.filter(pk=chain.pk).update(is_active=not gone)
    missing = max(c.pk for c in chains) + 1000
    with transaction.atomic():
        for chain_id in [c.pk for c in chains] + [missing]:
            for _ in range(2):  # compiled on the first call, kept for the second
                assert _compiled(chain_id, people[reader]) == _as_orm(chain_id, people[reader])


def test_the_agent_and_flow_come_with_the_chain_in_one_read(make_chain, user):
    chain = make_chain(messages=[{"role": "user", "content": "go"}], model_name="gpt-4o")
    with transaction.atomic():
        locked_chain(chain.pk, user)  # compiles
        with CaptureQueriesContext(connection) as captured:
            found = locked_chain(chain.pk, user)
            assert (found.agent.flow.model_name, found.last_seq, found.agent.flow.owner_id) == ("gpt-4o", 1, user.pk)
    assert chain_lock._COMPILED[("default", "owner")] is not None  # read through the kept text, not the ORM
    reads = [q["sql"] for q in captured.captured_queries if not q["sql"].startswith(("SAVEPOINT", "RELEASE"))]
    assert len(reads) == 1 and "flows_flow" in reads[0] and "flows_agent" in reads[0]
    if connection.vendor == "postgresql":
        assert reads[0].rstrip().endswith('FOR UPDATE OF "flows_chain"')


def test_a_rule_that_asks_the_reader_twice_is_read_through_the_orm(monkeypatch, make_chain, user, other_user):
    """A rule the sentinels cannot place (here the reader's id twice) is not kept: the ORM answers, as the rule says."""
    def shared(self: ChainQuerySet, reader: Any) -> ChainQuerySet:
        chains = self.select_related("agent__flow")
        return chains.filter(Q(agent__flow__owner=reader) | Q(agent__agent_type="reporter", agent__flow__owner=reader))

    monkeypatch.setattr(ChainQuerySet, "visible_to", shared)
    mine, theirs = make_chain(), make_chain(owner=other_user)
    with transaction.atomic():
        assert locked_chain(mine.pk, user).pk == mine.pk
        with pytest.raises(Chain.DoesNotExist):
            locked_chain(theirs.pk, user)
    assert chain_lock._COMPILED[("default", "owner")] is None


def test_an_api_append_to_someone_elses_chain_is_not_found_and_changes_nothing(api_client, make_chain, other_user):
    theirs = make_chain(owner=other_user, messages=[{"role": "user", "content": "go"}])
    for _ in range(2):  # the second through the kept text
        resp = api_client.post(f"/api/chains/{theirs.pk}/messages", {"messages": [{"role": "user", "content": "x"}]})
        assert resp.status_code == 404
    theirs.refresh_from_db()
    assert theirs.last_seq == 1 and theirs.messages.count() == 1


def test_an_archived_chain_refuses_the_append_and_names_the_active_one(make_chain, user):
    chain = make_chain(messages=[{"role": "user", "content": "go"}])
    Chain.objects.filter(pk=chain.pk).update(is_active=False)
    successor = Chain.objects.create(agent=chain.agent, parent=chain)
    with pytest.raises(AppendError) as refused:
        chain_append(chain=chain.pk, messages=[{"role": "user", "content": "more"}], visible_to=user)
    assert refused.value.code == "chain_archived" and refused.value.extra == {"active_chain_id": successor.pk}
    assert chain.messages.count() == 1
