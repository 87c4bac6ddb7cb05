"""chain_append_locked with the history in hand decides exactly as chain_append does reading it back."""
from __future__ import annotations

from typing import Any

import pytest
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flows.ingest import AppendError, batch_validate, chain_append, chain_append_locked
from flows.models import Chain, Message

pytestmark = pytest.mark.django_db

Msg = dict[str, Any]
CALLS = ["c1", "c2", "c3"]


def _assistant(ids: list[str]) -> Msg:
    if not ids:
        return {"role": "assistant", "content": "thinking"}
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": i, "type": "function", "function": {"name": f"fn_{i}", "arguments": "{}"}} for i in ids]}


message = st.one_of(
    st.builds(lambda: {"role": "user", "content": "go on"}),
    st.builds(_assistant, st.lists(st.sampled_from(CALLS), unique=True, max_size=2)),
    st.builds(lambda i: {"role": "tool", "tool_call_id": i, "content": f"out {i}"}, st.sampled_from(CALLS)),
)


def _outcome(append: Any) -> tuple[str, Any]:
    try:
        with transaction.atomic():
            result = append()
            rows = list(Message.objects.filter(pk__in=[r.pk for r in result.rows]).values_list("byte_size", "seq"))
            transaction.set_rollback(True)
        return "ok", (result.turn_completed, rows)
    except AppendError as exc:
        return "refused", (exc.code, exc.index)


def _locked_append(chain_id: int, prior: list[Msg], batch: list[Msg]) -> Any:
    chain = Chain.objects.select_for_update().select_related("agent__flow").get(pk=chain_id)
    return chain_append_locked(chain=chain, batch=batch_validate(batch), prior=prior)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=st.lists(message, max_size=6), batch=st.lists(message, min_size=1, max_size=3))
def test_pairing_turns_and_sizes_match_the_database_read(make_chain: Any, history: list[Msg],
                                                          batch: list[Msg]) -> None:
    prior: list[Msg] = [{"role": "user", "content": "task"}]
    chain = make_chain(prior)
    for msg in history:  # keep what the chain accepts: prior is exactly the stored history
        try:
            chain_append(chain=chain, messages=[msg])
            prior.append(msg)
        except AppendError:
            pass
    from_db = _outcome(lambda: chain_append(chain=Chain.objects.get(pk=chain.pk), messages=batch))
    in_hand = _outcome(lambda: _locked_append(chain.pk, prior, batch))
    assert in_hand == from_db
