"""Fixtures for the Django app's tests (flows, reliability, security), loaded once by tests/conftest.py.

Kept general on purpose: test modules build on `user`, `other_user`, `staff_user`, `api_client` (bearer
token), `session_client` (logged-in browser, CSRF enforced), `make_flow`, `make_agent`, `make_chain` and
`tool_round` (a small valid chain with one tool round).
"""
from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.test import Client

from flows.ingest import agent_create, api_token_create, chain_append, flow_create
from flows.models import Agent, Chain, Flow
from flows.pipeline import set_summarizer_factory
from tests.fakes import tool_call
from tests.flows.llm_fakes import FakeEndpoint, running_endpoint

PASSWORD = "correct-horse-battery-1"


class JsonClient(Client):
    """A test client whose post/put/patch send JSON bodies by default."""

    def _json(self, method: Callable, path: str, data: Any = None, **extra: Any):
        if "content_type" not in extra and not isinstance(data, (str, bytes)):
            data = json.dumps(data)
            extra["content_type"] = "application/json"
        return method(path, data, **extra)

    def post(self, path, data=None, **extra):  # type: ignore[override]
        return self._json(super().post, path, data, **extra)

    def put(self, path, data=None, **extra):  # type: ignore[override]
        return self._json(super().put, path, data, **extra)


@pytest.fixture(autouse=True)
def default_summarizer_after_each_test() -> Iterator[None]:
    """A test may install its own summarize callable (`use_summarizer`); the next test starts from the default."""
    yield
    set_summarizer_factory(None)


@pytest.fixture
def fake_endpoint() -> Iterator[FakeEndpoint]:
    """A scripted OpenAI-compatible endpoint on 127.0.0.1 for one test (tests/flows/llm_fakes.py)."""
    with running_endpoint() as endpoint:
        yield endpoint


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    """Tests make many users; the production hasher's deliberate slowness would dominate the suite's time."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def user(django_user_model):
    return django_user_model.objects.create_user("alice", password=PASSWORD)


@pytest.fixture
def other_user(django_user_model):
    return django_user_model.objects.create_user("mallory", password=PASSWORD)


@pytest.fixture
def staff_user(django_user_model):
    return django_user_model.objects.create_user("sam", password=PASSWORD, is_staff=True, is_superuser=True)


@pytest.fixture
def client_for(user) -> Client:
    """A page client logged in as `user` (no CSRF checks)."""
    c = Client()
    c.force_login(user)
    return c


@pytest.fixture
def staff_client_for(staff_user) -> Client:
    """A page client logged in as `staff_user` (no CSRF checks)."""
    c = Client()
    c.force_login(staff_user)
    return c


@pytest.fixture
def csrf_client_for(user) -> Client:
    """A page client logged in as `user`, with CSRF checks enforced like a real browser (see `csrf_post`)."""
    c = Client(enforce_csrf_checks=True)
    c.force_login(user)
    return c


@pytest.fixture
def api_token(user) -> str:
    _, raw = api_token_create(user=user, name="tests")
    return raw


@pytest.fixture
def api_client(api_token) -> JsonClient:
    """Authenticated as `user` with a bearer token (what agents use)."""
    return JsonClient(HTTP_AUTHORIZATION=f"Bearer {api_token}")


@pytest.fixture
def anon_client() -> JsonClient:
    return JsonClient()


@pytest.fixture
def session_client(user) -> JsonClient:
    """Logged in as `user` through the session, with CSRF checks enforced like a real browser."""
    client = JsonClient(enforce_csrf_checks=True)
    client.force_login(user)
    return client


@pytest.fixture
def make_flow(user) -> Callable[..., Flow]:
    def make(owner=None, title: str = "test flow", model_name: str = "") -> Flow:
        return flow_create(owner=owner or user, title=title, model_name=model_name)
    return make


@pytest.fixture
def make_agent(make_flow) -> Callable[..., Agent]:
    def make(flow: Flow | None = None, agent_type: str = "pentester", profile: str = "agent", **flow_kw) -> Agent:
        return agent_create(flow=flow or make_flow(**flow_kw), agent_type=agent_type, profile=profile)
    return make


@pytest.fixture
def make_chain(make_agent) -> Callable[..., Chain]:
    """An active chain, optionally holding `messages` (appended through the service)."""
    def make(messages: list[dict[str, Any]] | None = None, **agent_kw) -> Chain:
        chain = make_agent(**agent_kw).chains.get(is_active=True)
        if messages:
            chain_append(chain=chain, messages=messages)
            chain.refresh_from_db()
        return chain
    return make


def call(call_id: str, name: str = "terminal", arguments: str = '{"input": "nmap 10.0.0.5"}') -> dict[str, Any]:
    return tool_call(call_id, name, arguments)


@pytest.fixture
def tool_round() -> list[dict[str, Any]]:
    """system, user, assistant with one call, its result, final answer: one complete turn."""
    return [
        {"role": "system", "content": "You are a pentester."},
        {"role": "user", "content": "scan 10.0.0.5"},
        {"role": "assistant", "content": None, "tool_calls": [call("call_aaaaaaaaaaaaaaaaaaaaaaaa")]},
        {"role": "tool", "tool_call_id": "call_aaaaaaaaaaaaaaaaaaaaaaaa", "content": "22/tcp open ssh"},
        {"role": "assistant", "content": "Port 22 is open."},
    ]
