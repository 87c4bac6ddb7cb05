"""Issue 24 item 8: a dry run of "compact now" shows what it would produce and writes nothing; applying it reuses the
previewed summary while the chain has not moved, and recomputes (saying why) when it has."""
from __future__ import annotations

import re

import pytest

from flows.ingest import chain_append
from flows.models import ChainView, LLMCall, MemoryNote, Outcome, SummaryEvent
from flows.pipeline import chain_dry_run
from flows.pipeline.tasks import compact_chain_task
from tests.flows.llm_fakes import completion, isolated_llm, make_provider  # noqa: F401  (an autouse fixture)
from tests.flows.pipeline_support import ASK_RE, grow, small_budgets, turn, use_summarizer

pytestmark = pytest.mark.django_db

FOCUS = "Focus on the hosts and ports found"
LATEST_ASK = "Latest ask: task 3: scan host 10.0.0.4 and report open ports."  # the audit wants it reflected
HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def _summary(label: str):
    """A summarize callable that reflects the latest ask, as the engine's audit requires."""
    def summarize(prompt: str) -> str:
        asks = ASK_RE.findall(prompt)
        return f"{label}. Latest ask: {asks[-1] if asks else 'none'}"
    return summarize


def _rows() -> tuple[int, int, int, int]:
    return (SummaryEvent.objects.count(), ChainView.objects.count(), LLMCall.objects.count(),
            MemoryNote.objects.count())


def _chain(make_chain, turns: int = 4):
    chain = make_chain()
    small_budgets(chain, keep_recent_tokens=0)  # a hard checkpoint: every message leaves for the summary
    return grow(chain, range(turns))


def _worker_applies(chain, event_id: int, preview_id: int | None) -> SummaryEvent:
    """What the Celery worker runs for the queued task."""
    compact_chain_task(chain.pk, event_id, preview_id)
    return SummaryEvent.objects.get(pk=event_id)


def test_a_dry_run_shows_the_summary_and_what_it_replaces_and_writes_nothing(make_chain, fake_endpoint, user):
    make_provider(fake_endpoint.url)
    fake_endpoint.queue(*[completion(f"The agent scanned 10.0.0.1 to 10.0.0.4: ssh open on each. {LATEST_ASK}")] * 8)
    chain = _chain(make_chain)
    before = _rows()
    run = chain_dry_run(chain=chain, instructions=FOCUS, user=user)
    shown = run.as_json()
    assert _rows() == before  # no event, no view, no model-call row, no memory note
    assert shown["outcome"] == Outcome.OK and shown["instructions"] == FOCUS, shown["reason"]
    assert "ssh open on each" in shown["summary_text"]
    # everything but the system prompt (seq 1), which the compaction keeps
    assert shown["replaces_seqs"] == [[2, chain.last_seq]] and len(shown["replaced"]) == chain.last_seq - 1
    assert shown["tokens_after"] < shown["tokens_before"] and shown["bytes_after"] < shown["bytes_before"]
    assert shown["calls"] == len(fake_endpoint.requests) >= 1 and shown["models"] == ["fake-model"]
    assert FOCUS in fake_endpoint.requests[0]["json"]["messages"][1]["content"]
    assert shown["retention"]["counted"] > 0 and shown["preview_id"] > 0


def test_applying_an_unmoved_dry_run_reuses_its_summary_without_asking_the_model_again(make_chain, fake_endpoint,
                                                                                         client_for):
    make_provider(fake_endpoint.url)
    fake_endpoint.queue(*[completion(f"Hosts 10.0.0.1-4 run ssh; nothing else open. {LATEST_ASK}")] * 8)
    chain = _chain(make_chain)
    run = chain_dry_run(chain=chain, instructions=FOCUS).as_json()
    assert run["outcome"] == Outcome.OK, run["reason"]
    asked = len(fake_endpoint.requests)
    response = client_for.post(f"/chains/{chain.pk}/compact/", {"instructions": FOCUS,
                                                                 "preview_id": run["preview_id"]}, follow=True)
    assert "applies the summary you previewed" in response.content.decode()
    event = _worker_applies(chain, SummaryEvent.objects.get().pk, run["preview_id"])
    assert len(fake_endpoint.requests) == asked  # billed once, in the dry run
    assert event.outcome == Outcome.OK and "applied the dry run's result" in event.reason
    assert event.summary_text == run["summary_text"] and event.tokens_after == run["tokens_after"]
    assert event.llm_calls.count() == run["calls"] and event.calls == run["calls"]
    assert MemoryNote.objects.filter(flow=chain.agent.flow).exists()  # the apply flushed what leaves the view
    chain.refresh_from_db()
    assert chain.compactions == 1


def test_a_chain_that_moved_since_the_dry_run_is_recomputed_and_the_event_says_why(make_chain, client_for):
    previewed, recomputed = _summary("previewed summary"), _summary("recomputed summary")
    use_summarizer(lambda prompt: recomputed(prompt) if "task 4" in prompt else previewed(prompt))
    chain = _chain(make_chain)
    run = chain_dry_run(chain=chain, instructions="").as_json()
    chain_append(chain=chain, messages=turn(4))
    response = client_for.post(f"/chains/{chain.pk}/compact/", {"preview_id": run["preview_id"]}, follow=True)
    assert "recomputed: 4 message(s) arrived since the dry run" in response.content.decode()
    event = _worker_applies(chain, SummaryEvent.objects.get().pk, run["preview_id"])
    assert event.outcome == Outcome.OK and "recomputed: 4 message(s) arrived since the dry run" in event.reason
    assert "recomputed summary" in event.summary_text


def test_different_focus_or_an_unknown_preview_recomputes(make_chain):
    use_summarizer(_summary("summary"))
    chain = _chain(make_chain)
    run = chain_dry_run(chain=chain, instructions="one focus").as_json()
    other = SummaryEvent.objects.create(chain=chain, trigger="manual", outcome="running", instructions="another")
    assert "focus instructions differ" in _worker_applies(chain, other.pk, run["preview_id"]).reason
    gone = SummaryEvent.objects.create(chain=chain, trigger="manual", outcome="running")
    assert "the dry run expired" in _worker_applies(chain, gone.pk, 12345).reason


def test_the_dry_run_page_shows_hostile_text_escaped_and_offers_apply_and_cancel(make_chain, client_for):
    use_summarizer(_summary(f"summary mentioning {HOSTILE}"))
    chain = _chain(make_chain, turns=2)
    chain_append(chain=chain, messages=[{"role": "user", "content": HOSTILE},
                                        {"role": "assistant", "content": "noted"}])
    before = _rows()
    page = client_for.post(f"/chains/{chain.pk}/compact/preview/", {"instructions": FOCUS})
    body = page.content.decode()
    assert page.status_code == 200 and _rows() == before
    assert HOSTILE not in body and "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in body
    assert FOCUS in body and "Apply this compaction" in body and 'id="dry-run-cancel"' in body
    preview_id = re.search(r'name="preview_id" value="(\d+)"', body)
    assert preview_id and int(preview_id.group(1)) > 0


@pytest.mark.parametrize(("form", "said"), [
    ({"instructions": "x" * 5000}, "limited to"),
    ({"instructions": "   "}, None),  # blank focus is no focus: a plain compaction's dry run
])
def test_the_dry_run_page_refuses_huge_focus_text_clearly(make_chain, client_for, form, said):
    use_summarizer(_summary("summary"))
    chain = _chain(make_chain, turns=2)
    before = _rows()
    response = client_for.post(f"/chains/{chain.pk}/compact/preview/", form, follow=True)
    body = response.content.decode()
    assert response.status_code == 200 and _rows() == before
    if said:
        assert said in body and "nothing previewed" in body and "Apply this compaction" not in body
    else:
        assert "none: a plain compaction" in body


def test_nothing_to_compact_and_other_users_chains_are_clear_refusals(make_chain, client_for, other_user,
                                                                        make_agent):
    empty = make_chain()
    response = client_for.post(f"/chains/{empty.pk}/compact/preview/", {"instructions": FOCUS}, follow=True)
    assert "Nothing to preview: nothing to compact: the chain is empty" in response.content.decode()
    theirs = make_agent(owner=other_user).chains.get()
    grow(theirs, range(2))
    assert client_for.post(f"/chains/{theirs.pk}/compact/preview/", {}).status_code == 404
    assert _rows()[0] == 0


def test_the_api_dry_run_and_apply(make_chain, api_client, user):
    use_summarizer(_summary("API summary of the scans"))
    chain = _chain(make_chain)
    before = _rows()
    dry = api_client.post(f"/api/chains/{chain.pk}/compact", {"instructions": FOCUS, "dry_run": True})
    assert dry.status_code == 200 and _rows() == before
    body = dry.json()
    assert "API summary of the scans" in body["summary_text"] and body["replaces_seqs"] == [[2, chain.last_seq]]
    applied = api_client.post(f"/api/chains/{chain.pk}/compact", {"instructions": FOCUS,
                                                                   "preview_id": body["preview_id"]})
    assert applied.status_code == 201 and applied.json()["preview"] == {"reused": True, "recomputed_because": None}
    event = _worker_applies(chain, applied.json()["id"], body["preview_id"])
    assert event.summary_text == body["summary_text"]


@pytest.mark.parametrize(("payload", "status", "code"), [
    ({"dry_run": "yes"}, 400, "invalid_field"),
    ({"dry_run": True, "instructions": "x" * 5000}, 400, "invalid_field"),
    ({"dry_run": True, "instructions": None}, 400, "invalid_field"),
    ({"dry_run": True, "preview_id": 5}, 400, "invalid_body"),
    ({"preview_id": "5"}, 400, "invalid_field"),
    ({"preview_id": 2**60}, 400, "invalid_field"),
    ({"preview_id": True}, 400, "invalid_field"),
])
def test_the_api_refuses_bad_dry_run_input_with_a_clear_error(make_chain, api_client, payload, status, code):
    chain = _chain(make_chain, turns=1)
    before = _rows()
    response = api_client.post(f"/api/chains/{chain.pk}/compact", payload)
    assert response.status_code == status and response.json()["error"] == code
    assert _rows() == before


def test_the_api_says_when_there_is_nothing_to_compact_or_it_would_fail(make_chain, api_client, other_user,
                                                                        make_agent):
    empty = make_chain()
    nothing = api_client.post(f"/api/chains/{empty.pk}/compact", {"dry_run": True})
    assert nothing.status_code == 409 and nothing.json()["error"] == "nothing_to_compact"
    use_summarizer(lambda prompt: "nothing useful")  # fails the summary audit twice
    chain = _chain(make_chain, turns=1)
    failing = api_client.post(f"/api/chains/{chain.pk}/compact", {"dry_run": True})
    assert failing.status_code == 422 and failing.json()["error"] == "compaction_would_fail"
    assert failing.json()["detail"].startswith("compaction failed: summary audit failed")
    theirs = make_agent(owner=other_user).chains.get()
    assert api_client.post(f"/api/chains/{theirs.pk}/compact", {"dry_run": True}).status_code == 404
    assert _rows() == (0, 0, 0, 0)
