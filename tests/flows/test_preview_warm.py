"""flows.pipeline.preview_warm: opening the settings page warms its first preview in a background thread of
the serving process (committed rows: the thread reads them through its own connection)."""
from __future__ import annotations

import pytest

from flows.config import settings_for, settings_values
from flows.pipeline import preview_cache, preview_warm, preview_warm_wait
from flows.pipeline.preview_cache import preview_caches_clear
from tests.flows.test_pages_settings import form_values

pytestmark = pytest.mark.django_db(transaction=True)
WAIT_SECONDS = 120  # only a bound on a hung thread, never a speed check


@pytest.fixture(autouse=True)
def _empty_caches():
    preview_caches_clear()
    yield
    preview_warm_wait(WAIT_SECONDS)
    preview_caches_clear()


def long_chain(make_chain, tool_round, **agent_kw):
    big = tool_round[:3] + [{**tool_round[3], "content": "22/tcp open ssh 10.0.0.5\n" * 2000}] + tool_round[4:]
    return make_chain(big + [{"role": "user", "content": "go on"}, {"role": "assistant", "content": "ok"}],
                      **agent_kw)


def cached_chain_ids() -> set[int]:
    return {key[0] for key in preview_cache._chains.items}


def test_opening_the_page_warms_the_first_preview(client_for, make_chain, tool_round):
    chain = long_chain(make_chain, tool_round)
    assert client_for.get(f"/settings/?chain={chain.pk}").status_code == 200
    assert preview_warm_wait(WAIT_SECONDS)
    summaries = len(preview_cache._summaries.items)
    assert summaries > 0 and cached_chain_ids() == {chain.pk}
    response = client_for.post("/settings/", {"profile": "agent", "chain": chain.pk, "action": "preview",
                                              **form_values(settings_for(profile="agent"))},
                               HTTP_X_PARTIAL="preview")
    assert response.status_code == 200 and 'id="preview-diff"' in response.content.decode()
    assert len(preview_cache._summaries.items) == summaries  # every summary it needed was already there


def test_the_page_warms_its_newest_chain_when_none_is_asked_for(client_for, make_chain, tool_round):
    long_chain(make_chain, tool_round)
    newest = long_chain(make_chain, tool_round, title="newer")
    assert client_for.get("/settings/").status_code == 200
    assert preview_warm_wait(WAIT_SECONDS) and cached_chain_ids() == {newest.pk}


def test_a_chain_the_user_cannot_see_is_never_warmed(client_for, make_chain, make_flow, other_user, tool_round):
    theirs = long_chain(make_chain, tool_round, flow=make_flow(owner=other_user))
    assert client_for.get(f"/settings/?chain={theirs.pk}").status_code == 200
    assert preview_warm_wait(WAIT_SECONDS) and not cached_chain_ids() and not preview_cache._summaries.items


def test_nothing_is_warmed_for_a_missing_chain_or_refused_values(make_chain, tool_round):
    chain = make_chain(tool_round)
    values = settings_values(settings_for(profile="agent"))
    assert not preview_warm(chain_id=chain.pk + 1000, settings=values)
    assert not preview_warm(chain_id=chain.pk, settings={**values, "last_sec_bytes": -5})
    assert preview_warm(chain_id=chain.pk, settings=values) and cached_chain_ids() == {chain.pk}
