"""Hostile text and the JSON error contract: lone surrogates, NUL, field types, unknown OpenAI fields (issue 13).

Runs on SQLite by default; with DATABASE_URL=postgres://... the same tests prove both databases answer alike.
"""
from __future__ import annotations

import pytest
from django.test import Client

from flows.core import MAX_INSTRUCTIONS_CHARS
from flows.models import Chain, Flow, Message, SummaryEvent

pytestmark = pytest.mark.django_db

LONE = "\ud800"


def _surrogate_writes(chain: Chain) -> list[tuple[str, str, dict]]:
    flow_id = chain.agent.flow_id
    return [
        ("post", "/api/flows", {"title": "x" + LONE}),
        ("post", "/api/flows", {"title": "ok", "model_name": LONE}),
        ("post", f"/api/flows/{flow_id}/agents", {"agent_type": "pentester", LONE: 1}),
        ("post", f"/api/chains/{chain.pk}/messages", {"messages": [{"role": "user", "content": "a" + LONE}]}),
        ("post", f"/api/chains/{chain.pk}/messages", {"messages": [{"role": "user", "content": [
            {"type": "text", "text": LONE}]}]}),
        ("post", f"/api/chains/{chain.pk}/compact", {"instructions": LONE}),
        ("post", f"/api/chains/{chain.pk}/preview", {"settings": {"summarizer_model": LONE}}),
        ("put", f"/api/settings/agent?flow={flow_id}", {"settings": {"summarizer_model": LONE}}),
        ("post", "/api/import", {"data": [{"role": "user", "content": LONE}]}),
        ("post", "/api/import", {"data": [{"role": "user", "content": "q"}], "title": LONE}),
    ]


def _counts() -> tuple[int, int, int]:
    return Flow.objects.count(), Message.objects.count(), SummaryEvent.objects.count()


def test_a_lone_surrogate_is_a_clean_400_on_every_write_endpoint(api_client, make_chain, tool_round):
    chain = make_chain(messages=tool_round)
    for method, path, body in _surrogate_writes(chain):
        before = _counts()
        resp = getattr(api_client, method)(path, body)
        assert resp.status_code == 400, (path, resp.content)
        assert resp.json()["error"] == "invalid_text", path
        assert _counts() == before, path


def test_a_lone_surrogate_inside_an_uploaded_file_is_a_400(api_client):
    upload = Client(HTTP_AUTHORIZATION=api_client.defaults["HTTP_AUTHORIZATION"])
    from django.core.files.uploadedfile import SimpleUploadedFile

    data = b'[{"role": "user", "content": "scan \\ud800"}]'
    resp = upload.post("/api/import", {"file": SimpleUploadedFile("chain.json", data)})
    assert resp.status_code == 400 and resp.json()["error"] == "invalid_text"
    assert resp.json()["field"] == "content"
    assert Flow.objects.count() == 0


def test_the_surrogate_error_says_where_it_is(api_client, make_chain):
    chain = make_chain()
    body = {"messages": [{"role": "user", "content": "ok"}, {"role": "user", "content": [{"type": "text",
                                                                                        "text": LONE}]}]}
    resp = api_client.post(f"/api/chains/{chain.pk}/messages", body)
    assert resp.json()["field"] == "messages[1].content[0].text"


def test_a_valid_surrogate_pair_is_ordinary_text(api_client, make_chain):
    chain = make_chain()
    resp = api_client.post(f"/api/chains/{chain.pk}/messages", '{"messages": [{"role": "user", "content": '
                           '"\\ud83d\\ude00"}]}', content_type="application/json")
    assert resp.status_code == 201
    assert chain.messages.get().content == "\U0001F600"


@pytest.mark.parametrize("name", [5, True, ["a", "b"], {"a": 1}])
@pytest.mark.parametrize("role", ["user", "tool"])
def test_a_non_string_name_is_a_400_not_a_500_or_a_repr(api_client, make_chain, tool_round, name, role):
    chain = make_chain(messages=tool_round[:3] if role == "tool" else None)
    msg = ({"role": "tool", "tool_call_id": tool_round[3]["tool_call_id"], "content": "r", "name": name}
           if role == "tool" else {"role": "user", "content": "q", "name": name})
    before = chain.messages.count()
    resp = api_client.post(f"/api/chains/{chain.pk}/messages", {"messages": [msg]})
    assert resp.status_code == 400
    assert (resp.json()["error"], resp.json()["field"]) == ("invalid_message", "name")
    assert chain.messages.count() == before


@pytest.mark.parametrize("field", ["name", "tool_call_id"])
def test_nul_in_a_plain_text_message_field_is_a_400_on_every_database(api_client, make_chain, tool_round, field):
    chain = make_chain(messages=tool_round[:3])
    msg = {**tool_round[3], field: tool_round[3][field] + "\x00" if field == "tool_call_id" else "term\x00"}
    resp = api_client.post(f"/api/chains/{chain.pk}/messages", {"messages": [msg]})
    assert resp.status_code == 400 and resp.json()["field"] == field
    assert chain.messages.count() == 3


def test_nul_in_a_message_body_is_stored_and_read_back(api_client, make_chain):
    chain = make_chain()
    assert api_client.post(f"/api/chains/{chain.pk}/messages",
                           {"messages": [{"role": "user", "content": "a\x00b"}]}).status_code == 201
    assert api_client.get(f"/api/chains/{chain.pk}/messages").json()["messages"][0]["content"] == "a\x00b"


UNKNOWN_FIELDS = {"refusal": None, "annotations": [{"type": "url_citation", "url_citation": {"url": "https://x"}}],
                  "audio": {"id": "audio_1", "expires_at": 1, "data": "", "transcript": "hi"}, "x_vendor": [1, 2]}


def test_unknown_openai_fields_round_trip_verbatim(api_client, make_chain):
    chain = make_chain()
    sent = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a", **UNKNOWN_FIELDS}]
    assert api_client.post(f"/api/chains/{chain.pk}/messages", {"messages": sent}).status_code == 201
    raw = api_client.get(f"/api/chains/{chain.pk}").json()["raw"]
    assert [{k: v for k, v in m.items() if k not in ("seq", "byte_size", "token_count")} for m in raw] == sent
    export = api_client.get(f"/api/flows/{chain.agent.flow_id}/export?format=openai").json()
    exported = export["messages"] if isinstance(export, dict) else export
    assert exported[-1] == sent[-1]


def test_imported_unknown_fields_are_kept(api_client):
    data = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a", "refusal": "no"}]
    resp = api_client.post("/api/import", {"format": "openai", "data": data})
    assert resp.status_code == 201
    assert Message.objects.get(chain_id=resp.json()["chain_id"], seq=2).to_dict()["refusal"] == "no"


@pytest.mark.parametrize("instructions", [{}, [], 5, True, None, {"text": "x"}])
def test_non_string_instructions_are_refused(api_client, make_chain, tool_round, instructions):
    chain = make_chain(messages=tool_round)
    resp = api_client.post(f"/api/chains/{chain.pk}/compact", {"instructions": instructions})
    assert resp.status_code == 400 and resp.json()["field"] == "instructions"
    assert not SummaryEvent.objects.filter(chain=chain).exists()


def test_instructions_are_capped_alike_on_the_api_and_the_page(api_client, session_client, make_chain, tool_round):
    chain = make_chain(messages=tool_round)
    too_long = "x" * (MAX_INSTRUCTIONS_CHARS + 1)
    assert api_client.post(f"/api/chains/{chain.pk}/compact", {"instructions": too_long}).status_code == 400
    page = Client()
    page.force_login(chain.agent.flow.owner)
    page.post(f"/chains/{chain.pk}/compact/", {"instructions": too_long})
    assert not SummaryEvent.objects.filter(chain=chain).exists()
    fits = "x" * MAX_INSTRUCTIONS_CHARS
    assert api_client.post(f"/api/chains/{chain.pk}/compact", {"instructions": fits}).status_code == 201
    assert page.post(f"/chains/{chain.pk}/compact/", {"instructions": fits}).status_code == 302
    assert SummaryEvent.objects.filter(chain=chain).count() == 2
    assert f'maxlength="{MAX_INSTRUCTIONS_CHARS}"' in page.get(f"/chains/{chain.pk}/").content.decode()


def test_nul_in_instructions_is_a_400_on_the_api_and_the_page(api_client, make_chain, tool_round):
    chain = make_chain(messages=tool_round)
    assert api_client.post(f"/api/chains/{chain.pk}/compact", {"instructions": "a\x00b"}).status_code == 400
    page = Client()
    page.force_login(chain.agent.flow.owner)
    assert page.post(f"/chains/{chain.pk}/compact/", {"instructions": "a\x00b"}).status_code == 400
    assert not SummaryEvent.objects.filter(chain=chain).exists()


@pytest.mark.parametrize("query", ["q=%00", "tool=%00", "q=scan%00", "tool=nmap%00x"])
def test_nul_in_a_chain_page_filter_is_a_400(make_chain, tool_round, query):
    chain = make_chain(messages=tool_round)
    page = Client()
    page.force_login(chain.agent.flow.owner)
    assert page.get(f"/chains/{chain.pk}/?{query}").status_code == 400
    assert page.get(f"/chains/{chain.pk}/view-panel/?{query}").status_code == 400


@pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
def test_writing_to_the_schema_is_a_json_405(method):
    resp = getattr(Client(enforce_csrf_checks=True), method)("/api/openapi.json")
    assert resp.status_code == 405
    assert resp["Content-Type"] == "application/json"
    assert resp.json()["error"] == "method_not_allowed" and resp["Allow"] == "GET, HEAD"


def test_multipart_without_a_boundary_is_a_400_with_a_json_body(api_client):
    resp = api_client.post("/api/import", b"--x\r\n", content_type="multipart/form-data")
    assert resp.status_code == 400
    assert resp.json()["error"] == "malformed_multipart"
