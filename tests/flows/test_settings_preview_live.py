"""The settings page's preview as you type: the partial answer settings.js swaps in, the diff against the
current view, changed marks only on fields that really differ, and a read-only page where saving is refused."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
from django.test import Client

from flows.config import settings_for
from flows.pages.preview_diff import diff_views
from flows.pages.settings_page import differs_from_default
from tests.flows.test_pages_settings import csrf_post, form_values

pytestmark = pytest.mark.django_db
PARTIAL = {"HTTP_X_PARTIAL": "preview"}


def partial_post(client: Client, data: dict) -> object:
    return csrf_post(client, "/settings/", data, **PARTIAL)


def long_chain(make_chain, tool_round):
    big = tool_round[:3] + [{**tool_round[3], "content": "22/tcp open ssh\n" * 2000}] + tool_round[4:]
    return make_chain(big + [{"role": "user", "content": "go on"}, {"role": "assistant", "content": "ok"}])


def test_a_partial_preview_is_only_the_preview_section_with_its_diff(csrf_client_for, make_chain, tool_round):
    chain = long_chain(make_chain, tool_round)
    response = partial_post(csrf_client_for, {"profile": "agent", "flow": chain.agent.flow_id, "chain": chain.pk,
                                      "action": "preview",
                                      **form_values(settings_for(profile="agent"), last_sec_bytes=2048)})
    body = response.content.decode()
    assert response.status_code == 200
    assert body.lstrip().startswith('<section class="card preview" id="preview"') and "<html" not in body
    assert 'id="preview-diff"' in body and 'data-status="added"' in body and "No view yet" in body


def test_a_partial_preview_with_a_bad_value_is_a_400_section_naming_it(csrf_client_for, make_chain, tool_round):
    chain = make_chain(tool_round)
    response = partial_post(csrf_client_for, {"profile": "agent", "flow": chain.agent.flow_id, "chain": chain.pk,
                                      "action": "preview",
                                      **form_values(settings_for(profile="agent"), last_sec_bytes="-5")})
    body = response.content.decode()
    assert response.status_code == 400 and 'id="preview"' in body and "last_sec_bytes" in body
    assert "<html" not in body


def test_an_untouched_form_marks_nothing_changed_after_a_preview(csrf_client_for, make_chain, tool_round):
    chain = make_chain(tool_round)
    response = csrf_post(csrf_client_for, f"/settings/?flow={chain.agent.flow_id}", {
        "profile": "agent", "flow": chain.agent.flow_id, "chain": chain.pk, "action": "preview",
        **form_values(settings_for(profile="agent"))})
    assert response.status_code == 200 and "is-changed" not in response.content.decode()
    response = csrf_post(csrf_client_for, f"/settings/?flow={chain.agent.flow_id}", {
        "profile": "agent", "flow": chain.agent.flow_id, "chain": chain.pk, "action": "preview",
        **form_values(settings_for(profile="agent"), last_sec_bytes=4096)})
    assert response.content.decode().count("is-changed") == 1


@pytest.mark.parametrize(("value", "default", "differs"), [
    ("51200", 51200, False), (51200, 51200, False), ("51201", 51200, True), ("", None, False), (None, None, False),
    ("100", None, True), ("", 5, True), ("on", True, False), (False, True, True), ("on", False, True),
    ("0.5", 0.5, False), ("", "", False), ("x", "", True),
])
def test_a_field_differs_from_its_default_only_by_value(value, default, differs):
    assert differs_from_default(value, default) is differs


def test_defaults_are_shown_read_only_to_who_cannot_save_them(csrf_client_for):
    body = csrf_client_for.get("/settings/").content.decode()
    assert '<output class="setting-value" id="id_last_sec_bytes">51200</output>' in body
    assert 'name="last_sec_bytes"' not in body and 'id="save-btn"' not in body


def test_staff_get_inputs_for_the_defaults(staff_user):
    client = Client()
    client.force_login(staff_user)
    body = client.get("/settings/").content.decode()
    assert 'name="last_sec_bytes"' in body and "setting-value" not in body


def row(role: str, text: str) -> SimpleNamespace:
    return SimpleNamespace(role=role, full=text, byte_size=len(text))


def test_the_diff_pairs_changed_messages_and_counts_added_and_removed():
    current = [row("system", "s"), row("user", "q1"), row("assistant", "a1"), row("user", "q2")]
    new = [row("system", "s"), row("assistant", "summary"), row("user", "q2"), row("assistant", "a2")]
    diff = diff_views(current, new)
    assert [r.status for r in diff.rows] == ["same", "changed", "removed", "same", "added"]
    assert (diff.same, diff.changed, diff.removed, diff.added, diff.any) == (2, 1, 1, 1, True)
    assert [r.current for r in diff.rows if r.status != "added"] == current
    assert [r.new for r in diff.rows if r.status != "removed"] == new


def test_the_same_view_is_no_diff():
    view = [row("system", "s"), row("user", "q")]
    diff = diff_views(view, list(view))
    assert not diff.any and diff.same == 2
