"""The published OpenAPI document (/api/openapi.json) fuzzed with schemathesis through the WSGI app.

Every operation gets generated requests (bounded examples), authenticated with a real bearer token against
objects that exist (ids 1..3 are more often real than random integers), and every response must be a non-5xx
that matches what the document promises."""
from __future__ import annotations

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis import checks

from flows.ingest import agent_create, api_token_create, chain_append, flow_create

pytestmark = pytest.mark.django_db

schema = schemathesis.openapi.from_wsgi("/api/openapi.json", get_wsgi_application())
EXAMPLES_PER_OPERATION = 25
CHECKS = [checks.not_a_server_error, checks.status_code_conformance, checks.content_type_conformance,
          checks.response_schema_conformance]


@pytest.fixture
def keep_test_connection():
    """A raw WSGI handler closes the database connection after each request (Django's test client stops it
    from doing so); the test's transaction lives on that connection, so keep it open as the test client does."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def token(user, tool_round, keep_test_connection) -> str:
    """A user owning a flow with an agent and a short chain, so ids in generated paths sometimes exist."""
    flow = flow_create(owner=user, title="fuzzed")
    chain = agent_create(flow=flow, agent_type="pentester").chains.get(is_active=True)
    chain_append(chain=chain, messages=tool_round)
    return api_token_create(user=user, name="schemathesis")[1]


@schema.parametrize()
@settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.filter_too_much])
def test_every_documented_operation_answers_as_documented(case, token):
    case.call_and_validate(headers={"Authorization": f"Bearer {token}"}, checks=CHECKS)
