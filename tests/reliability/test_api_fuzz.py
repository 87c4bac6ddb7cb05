"""Hypothesis-generated bodies for every API endpoint: a success does exactly what it says, anything else is a
clean 4xx that wrote nothing; never a 500."""
from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.reliability.invariants import assert_chain_intact, assert_client_error, row_counts

pytestmark = pytest.mark.django_db

FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                       HealthCheck.too_slow])
CALL_IDS = ["call_aaaaaaaaaaaaaaaaaaaaaaaa", "call_bbbbbbbbbbbbbbbbbbbbbbbb", "x"]

scalars = st.none() | st.booleans() | st.integers(min_value=-2**70, max_value=2**70) | \
    st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=30)
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) |
                           st.dictionaries(st.text(max_size=12), inner, max_size=4), max_leaves=15)

tool_calls = st.lists(st.fixed_dictionaries({"id": st.sampled_from(CALL_IDS), "type": st.just("function"),
                                             "function": st.one_of(st.none(), st.fixed_dictionaries({
                                                 "name": st.sampled_from(["terminal", "", "x" * 300]),
                                                 "arguments": st.sampled_from(['{"input": "id"}', "{", "[]"])}))}),
                      max_size=2)
# Near-valid messages: the right keys with plausible or wrong values, so the validator's corners get hit.
messages = st.fixed_dictionaries(
    {"role": st.sampled_from(["system", "user", "assistant", "tool", "function", "", "USER"])},
    optional={"content": st.none() | st.text(max_size=60) | json_values,
              "tool_calls": tool_calls | json_values, "tool_call_id": st.sampled_from(CALL_IDS) | json_values,
              "name": st.text(max_size=10) | json_values, "reasoning": json_values})
batches = st.lists(messages, min_size=0, max_size=5) | json_values


def _check(response: Any, before: dict[str, int]) -> None:
    assert response.status_code < 500, response.content[:300]
    if response.status_code >= 400:
        assert_client_error(response)
        assert row_counts() == before


@pytest.fixture
def chain(make_chain, tool_round):
    """One chain per test: hypothesis runs all examples of a test against it (it grows as batches succeed)."""
    return make_chain(tool_round)


@FUZZ
@given(batch=batches)
def test_generated_batches_are_stored_whole_or_not_at_all(api_client, chain, batch):
    chain.refresh_from_db()
    before, last = row_counts(), chain.last_seq
    response = api_client.post(f"/api/chains/{chain.pk}/messages", {"messages": batch})
    _check(response, before)
    if response.status_code == 201:
        assert response.json()["appended"] == len(batch)
        assert response.json()["last_seq"] == last + len(batch)
    assert_chain_intact(chain)


@pytest.fixture
def endpoints(chain) -> list[tuple[str, str]]:
    flow = chain.agent.flow_id
    return [("post", "/api/flows"), ("post", f"/api/flows/{flow}/agents"), ("post", f"/api/chains/{chain.pk}/compact"),
            ("post", f"/api/chains/{chain.pk}/preview"), ("post", "/api/import"),
            ("put", f"/api/settings/agent?flow={flow}"), ("put", "/api/settings/assistant")]


@FUZZ
@given(body=st.dictionaries(st.sampled_from(["title", "model_name", "agent_type", "profile", "instructions",
                                             "settings", "data", "format", "last_sec_bytes", "preserve_last",
                                             "max_qa_sections", "identifier_policy", "reserve_tokens"]),
                            json_values, max_size=4),
       index=st.integers(min_value=0, max_value=6))
def test_generated_objects_to_every_write_endpoint_never_fail_the_server(api_client, endpoints, body, index):
    method, path = endpoints[index]
    before = row_counts()
    _check(getattr(api_client, method)(path, body), before)


@FUZZ
@given(raw=st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_generated_raw_bodies_never_fail_the_server(api_client, endpoints, raw):
    for method, path in endpoints:
        before = row_counts()
        _check(getattr(api_client, method)(path, raw, content_type="application/json"), before)


@FUZZ
@given(text=st.lists(st.one_of(st.text(max_size=40), json_values.map(json.dumps)), max_size=6).map("\n".join),
       fmt=st.sampled_from([None, "openai", "pentagi", "openclaw"]))
def test_generated_transcripts_import_whole_or_not_at_all(api_client, text, fmt):
    before = row_counts()
    response = api_client.post("/api/import", {"data": text, **({"format": fmt} if fmt else {})})
    _check(response, before)
    if response.status_code == 201:
        from flows.models.chains import Chain

        chain = Chain.objects.get(pk=response.json()["chain_id"])
        assert chain.last_seq == response.json()["messages"] > 0
        assert_chain_intact(chain)


@FUZZ
@given(query=st.dictionaries(st.sampled_from(["after_seq", "limit", "format", "chain", "flow"]),
                             st.text(max_size=12) | st.integers().map(str), max_size=3))
def test_generated_query_strings_never_fail_the_server(api_client, chain, query):
    for path in (f"/api/chains/{chain.pk}/messages", f"/api/flows/{chain.agent.flow_id}/export",
                 "/api/settings/agent", f"/api/chains/{chain.pk}/events"):
        response = api_client.get(path, query)
        assert response.status_code < 500, (path, query, response.content[:200])
