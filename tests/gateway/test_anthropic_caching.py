"""Prompt caching survives compaction: in manage mode the gateway keeps a `cache_control` breakpoint at the end
of the stable prefix (system + the summary), so between two compactions every request reads that prefix from
the cache of the scripted upstream, which counts caching as Anthropic does (tests/gateway/upstream_anthropic.py).
The `window` strategy compacts only when the view would not fit, so a summary stays for several turns."""
from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest

from tests.gateway.anthropic_stand import Stand, running_stand, turn

pytestmark = pytest.mark.timeout(600)

TURNS = 16


@pytest.fixture(scope="module")
def window_stand(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stand]:
    with running_stand(tmp_path_factory.mktemp("anthropic-caching"), COMPACTION_STRATEGY="window") as running:
        yield running


def test_after_a_compaction_the_requests_read_the_system_and_the_summary_from_the_cache(
        window_stand: Stand) -> None:
    upstream = window_stand.upstream
    first = len(upstream.cache_log)
    messages: list[Any] = [{"role": "user", "content": "scan the 10.20.5.0/24 range"}]
    for _ in range(TURNS):
        turn(window_stand.client("manage"), messages, stream=False)
    log = upstream.cache_log[first:]
    between = [list(group) for key, group in itertools.groupby(log, key=lambda e: e["summary"]) if key]
    assert between, "the history outgrew the window: a compaction must have happened"
    assert any(len(group) >= 2 for group in between), "a summary must stay for more than one request"
    for group in between:
        opened = group[0]  # the first request with a new summary reads the system and writes up to the summary
        assert opened["written"] > 0
        for later in group[1:]:
            assert later["read"] >= opened["read"] + opened["written"]
    assert log[-1]["read"] > 0
