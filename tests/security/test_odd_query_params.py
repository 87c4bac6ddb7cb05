"""Odd query and form parameters on every page and read endpoint answer a 2xx/3xx/4xx, never a 500.

Ids are plain ASCII digits: `str.isdigit()` accepts "²", which `int()` refuses, so `?flow=²` used to be a 500.
"""
from __future__ import annotations

import pytest
from django.test import Client

from flows.core import parse_id

pytestmark = pytest.mark.django_db

HUGE = "9" * 30
ODD_VALUES = ["-1", "0", "abc", HUGE, "²", "١٢", "1e3", " 7", "<script>alert(1)</script>", "%00", "a" * 20_000]
ODD_NAMES = ["page", "sel", "flow", "chain", "role", "tool", "q", "profile", "after_seq", "limit", "format"]


@pytest.fixture
def browser(user, make_chain, tool_round) -> tuple[Client, dict[str, int]]:
    chain = make_chain(tool_round)
    client = Client(raise_request_exception=False)
    client.force_login(user)
    return client, {"flow": chain.agent.flow_id, "chain": chain.pk}


def _get_paths(ids: dict[str, int]) -> list[str]:
    f, c = ids["flow"], ids["chain"]
    return ["/", f"/flows/{f}/", f"/chains/{c}/", f"/chains/{c}/view-panel/", "/settings/", "/settings/export.env",
            f"/chains/{c}/messages/1.txt", f"/api/chains/{c}", f"/api/chains/{c}/messages", f"/api/chains/{c}/events",
            f"/api/flows/{f}", f"/api/flows/{f}/export", "/api/flows", "/api/settings/agent"]


@pytest.mark.parametrize("name", ODD_NAMES)
def test_no_page_or_endpoint_answers_500_to_an_odd_query_parameter(browser, name):
    client, ids = browser
    failures = [(path, value[:20], status) for path in _get_paths(ids) for value in ODD_VALUES
                if (status := client.get(path, {name: value}).status_code) >= 500]
    assert failures == []


@pytest.mark.parametrize("field", ["flow", "chain"])
@pytest.mark.parametrize("value", ["²", HUGE, "-3", "x"])
def test_the_settings_form_refuses_an_odd_scope_or_chain_without_a_500(browser, field, value):
    client, ids = browser
    data = {"profile": "agent", "flow": str(ids["flow"]), "chain": str(ids["chain"]), "action": "preview",
            field: value}
    assert client.post("/settings/", data).status_code < 500


@pytest.mark.parametrize("raw, expected", [("12", 12), ("0", 0), ("²", None), ("١٢", None), ("-1", None),
                                           (" 1", None), ("", None), (None, None), ("9" * 19, None)])
def test_an_id_parameter_is_one_to_eighteen_ascii_digits(raw, expected):
    assert parse_id(raw) == expected
