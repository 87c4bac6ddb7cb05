"""Issue 23 item 5: the retention score of a compaction, from the same detection the summaries use."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from summarizer import retention_of

REPLACED = [
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function",
         "function": {"name": "terminal", "arguments": '{"cmd": "nxc smb 10.0.0.5"}'}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "SMB 10.0.0.5 445 DC01 [+] corp.local\\alice:Summer2024! "
                                                      "(Pwn3d!)\nhost dc01.corp.local"},
]


def test_a_view_that_quotes_everything_keeps_all():
    view = [{"role": "assistant", "content": "corp.local\\alice:Summer2024! on 10.0.0.5 (dc01.corp.local)"}]
    retention = retention_of(REPLACED, view)
    assert retention.score == 1.0 and retention.lost == [] and not retention.lost_secret


def test_a_lost_credential_is_listed_first_and_flagged():
    view = [{"role": "assistant", "content": "Scanned 10.0.0.5; dc01.corp.local answers."}]
    retention = retention_of(REPLACED, view)
    assert retention.lost[0] == {"kind": "credential", "value": "corp.local\\alice:Summer2024!"}
    assert retention.lost_secret and 0 < retention.score < 1
    assert retention.kept == retention.counted - len(retention.lost)


def test_nothing_worth_counting_scores_one():
    retention = retention_of([{"role": "user", "content": "hello there"}], [])
    assert (retention.score, retention.counted) == (1.0, 0)


def test_the_stored_form_is_plain_json():
    stored = retention_of(REPLACED, []).as_dict()
    assert stored["score"] == 0.0 and stored["lost_secret"] is True and stored["counted"] == len(stored["lost"])


@settings(max_examples=50, deadline=None)
@given(st.text(max_size=400), st.text(max_size=400))
def test_the_score_is_a_share_and_counts_agree(replaced, view):
    retention = retention_of([{"role": "tool", "tool_call_id": "x", "content": replaced}],
                             [{"role": "assistant", "content": view}])
    assert 0.0 <= retention.score <= 1.0
    assert retention.kept + len(retention.lost) == retention.counted
