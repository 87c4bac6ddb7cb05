"""Hand-made hostile inputs to every API endpoint and to the importer: a clear 4xx, nothing written, no 500."""
from __future__ import annotations

import json

import pytest

from tests.reliability.invariants import assert_chain_intact, assert_client_error, row_counts

pytestmark = pytest.mark.django_db

HUGE_ID = "9" * 18
CALL_ID = "call_aaaaaaaaaaaaaaaaaaaaaaaa"

NOT_OBJECTS = ["null", "[]", "42", '"text"', "true", "[{}]"]
BROKEN_JSON = ["", "{", '{"a": }', "\x00\x01", '{"a": 1} trailing', "NaN", b"\xff\xfe{", "[" * 5000,
               "[" * 100_000 + "]" * 100_000]

HOSTILE_BATCHES = [
    [],
    None,
    "not a list",
    [None],
    [42],
    [{"role": "hacker", "content": "x"}],
    [{"role": "user"}],
    [{"role": "user", "content": {"nested": "object"}}],
    [{"role": "user", "content": [{"type": "unknown_part"}]}],
    [{"role": "tool", "tool_call_id": "nobody-called-me", "content": "orphan"}],
    [{"role": "system", "content": "a second system prompt in the middle"}],
    [{"role": "assistant", "content": None, "tool_calls": [{"id": CALL_ID, "type": "function", "function": {
        "name": 7, "arguments": "{}"}}]}],
    [{"role": "assistant", "content": None, "tool_calls": [{"id": CALL_ID, "type": "function", "function": {
        "name": "t", "arguments": {"not": "a JSON string"}}}]}],
    [{"role": "assistant", "content": None, "tool_calls": "not a list"}],
    [{"role": "user", "content": "fine"}, {"role": "tool", "tool_call_id": "x", "content": "breaks the batch"}],
    [{"role": "user", "content": "x" * (4 * 1024 * 1024 + 10)}],
    [{"role": "user", "content": "ok"}] * 1001,
]


def test_every_json_endpoint_rejects_bodies_that_are_not_objects(api_client, make_chain, tool_round):
    chain = make_chain(tool_round)
    flow_id = chain.agent.flow_id
    # (compaction also takes an empty body: it means "no instructions")
    endpoints = [("post", "/api/flows"), ("post", f"/api/flows/{flow_id}/agents"),
                 ("post", f"/api/chains/{chain.pk}/messages"), ("post", f"/api/chains/{chain.pk}/preview"),
                 ("post", "/api/import"),
                 ("put", f"/api/settings/agent?flow={flow_id}")]
    before = row_counts()
    for method, path in endpoints:
        for body in NOT_OBJECTS + BROKEN_JSON:
            response = getattr(api_client, method)(path, body, content_type="application/json")
            assert_client_error(response)
    for body in NOT_OBJECTS + BROKEN_JSON[1:]:
        assert_client_error(api_client.post(f"/api/chains/{chain.pk}/compact", body, content_type="application/json"))
    assert row_counts() == before
    assert_chain_intact(chain, tool_round)


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", "application/xml", ""])
def test_other_content_types_are_refused(api_client, make_chain, tool_round, content_type):
    chain = make_chain(tool_round)
    before = row_counts()
    body = json.dumps({"messages": [{"role": "user", "content": "hi"}]})
    response = api_client.post(f"/api/chains/{chain.pk}/messages", body, content_type=content_type)
    assert_client_error(response)
    assert row_counts() == before


@pytest.mark.parametrize("batch", HOSTILE_BATCHES, ids=lambda b: json.dumps(b)[:40] if b is not None else "None")
def test_a_hostile_batch_is_refused_whole(api_client, make_chain, tool_round, batch):
    chain = make_chain(tool_round)
    before = row_counts()
    response = api_client.post(f"/api/chains/{chain.pk}/messages", {"messages": batch})
    assert_client_error(response)
    assert row_counts() == before
    assert_chain_intact(chain, tool_round)


def test_agent_text_with_markup_and_control_characters_is_stored_verbatim(api_client, make_chain, tool_round):
    chain = make_chain(tool_round)
    nasty = "<script>alert(1)</script>\u202e\u0007 ' \" ; DROP TABLE flows_message; -- \U0001F4A3 \\x00"
    response = api_client.post(f"/api/chains/{chain.pk}/messages", {"messages": [{"role": "user", "content": nasty}]})
    assert response.status_code == 201
    assert_chain_intact(chain, [*tool_round, {"role": "user", "content": nasty}])


@pytest.mark.parametrize("path", [
    f"/api/flows/{HUGE_ID}", f"/api/chains/{HUGE_ID}", f"/api/chains/{HUGE_ID}/messages", "/api/flows/-1",
    "/api/flows/0", "/api/chains/1e3", "/api/flows/%00", "/api/settings/" + "a" * 21, "/api/settings/root",
    "/api/../../etc/passwd", "/api/chains/1/messages?after_seq=-5", "/api/chains/1/messages?limit=abc",
    "/api/flows/1/export?format=<svg>", f"/api/flows/1/export?chain={HUGE_ID}", "/api/settings/agent?flow=abc",
])
def test_odd_paths_and_query_strings_are_clean_client_errors(api_client, make_chain, tool_round, path):
    make_chain(tool_round)
    assert_client_error(api_client.get(path))


def test_query_parameters_out_of_range_are_400(api_client, make_chain, tool_round):
    chain = make_chain(tool_round)
    for query in ("after_seq=-1", "after_seq=99999999999", "limit=0", "limit=100000", "limit=1.5"):
        response = api_client.get(f"/api/chains/{chain.pk}/messages?{query}")
        assert response.status_code == 400, query


@pytest.mark.parametrize("data", [
    "", "not json at all", "{}", "[]", '{"messages": "nope"}', "\x00" * 100, '{"role": "user"}\n{broken',
    [{"role": "tool", "tool_call_id": "x", "content": "orphan first"}], [{"role": "user"}], {"unknown": "shape"},
    42, None,
])
def test_broken_transcripts_import_nothing(api_client, data):
    before = row_counts()
    response = api_client.post("/api/import", {"data": data})
    assert_client_error(response)
    assert row_counts() == before


@pytest.mark.parametrize("options", [{"format": "docx"}, {"agent_type": "root"}, {"profile": "god"}, {"title": 5}])
def test_import_options_are_validated_before_anything_is_written(api_client, tool_round, options):
    before = row_counts()
    response = api_client.post("/api/import", {"data": tool_round, **options})
    assert_client_error(response)
    assert row_counts() == before


def test_a_broken_multipart_upload_is_a_400(api_client):
    before = row_counts()
    body = b"--XYZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.json\"\r\n\r\n{\"a\":"
    response = api_client.post("/api/import", body, content_type="multipart/form-data; boundary=XYZ")
    assert_client_error(response)
    assert row_counts() == before


def test_multipart_without_a_file_field_is_a_400(api_client):
    before = row_counts()
    response = api_client.post("/api/import", {"format": "openai"}, content_type="multipart/form-data; boundary=B")
    assert_client_error(response)
    assert row_counts() == before


@pytest.mark.parametrize("body", [
    {"title": ""}, {"title": "   "}, {"title": None}, {"title": ["x"]}, {"title": "x" * 201},
    {"title": "ok", "model_name": 7}, {"title": "ok", "model_name": "m" * 201},
])
def test_flow_fields_are_validated(api_client, body):
    before = row_counts()
    assert_client_error(api_client.post("/api/flows", body))
    assert row_counts() == before


@pytest.mark.parametrize("body", [{}, {"agent_type": "root"}, {"agent_type": "pentester", "profile": "restore"},
                                  {"agent_type": ["pentester"]}, {"agent_type": None}])
def test_agent_fields_are_validated(api_client, make_flow, body):
    flow = make_flow()
    before = row_counts()
    assert_client_error(api_client.post(f"/api/flows/{flow.pk}/agents", body))
    assert row_counts() == before


@pytest.mark.parametrize("body", [{"instructions": 5}, {"instructions": "x" * 801}, {"instructions": ["a"]}])
def test_compaction_instructions_are_validated(api_client, make_chain, tool_round, body):
    chain = make_chain(tool_round)
    before = row_counts()
    assert_client_error(api_client.post(f"/api/chains/{chain.pk}/compact", body))
    assert row_counts() == before


@pytest.mark.parametrize("values", [
    {"last_sec_bytes": -1}, {"last_sec_bytes": "lots"}, {"max_qa_sections": 10**30}, {"preserve_last": "maybe"},
    {"no_such_setting": 1}, {"keep_qa_sections": 1.5}, "not an object", [1, 2],
])
def test_preview_and_settings_refuse_bad_values_and_save_nothing(api_client, make_chain, tool_round, values):
    chain = make_chain(tool_round)
    before = row_counts()
    assert_client_error(api_client.post(f"/api/chains/{chain.pk}/preview", {"settings": values}))
    assert_client_error(api_client.put(f"/api/settings/agent?flow={chain.agent.flow_id}", {"settings": values}
                                       if not isinstance(values, dict) else values))
    assert row_counts() == before


@pytest.mark.parametrize("payload", ["[" * 100_000 + "]" * 100_000, '{"a":' * 50_000 + "1" + "}" * 50_000,
                                     '{"role": "user", "content": ' + "[" * 50_000 + "]" * 50_000 + "}\n"])
def test_deeply_nested_transcripts_are_refused_not_crashed_on(api_client, payload):
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.test import Client

    before = row_counts()
    assert_client_error(api_client.post("/api/import", {"data": payload}))
    upload = SimpleUploadedFile("deep.json", payload.encode(), content_type="application/json")
    response = Client.post(api_client, "/api/import", {"file": upload})  # multipart, not JSON
    assert_client_error(response)
    assert row_counts() == before


@pytest.mark.parametrize("depth", [50, 900])
def test_nested_but_parseable_values_never_cause_a_server_error(api_client, make_chain, tool_round, depth):
    chain = make_chain(tool_round)
    nested: object = "x"
    for _ in range(depth):
        nested = [nested]
    before = row_counts()
    for path, body in [(f"/api/chains/{chain.pk}/messages", {"messages": [{"role": "user", "content": nested}]}),
                       (f"/api/chains/{chain.pk}/messages", {"messages": nested}),
                       ("/api/import", {"data": nested}), ("/api/flows", {"title": nested}),
                       (f"/api/chains/{chain.pk}/preview", {"settings": {"last_sec_bytes": nested}})]:
        assert_client_error(api_client.post(path, body))
    assert row_counts() == before


@pytest.mark.parametrize("where", ["content", "tool_output", "title", "arguments", "tool_call_id", "name",
                                   "import_title", "import_model"])
def test_nul_characters_never_cause_a_server_error(api_client, make_chain, tool_round, where):
    """PostgreSQL cannot store U+0000 in text or jsonb; SQLite can. Either way: stored or a clean 4xx."""
    chain = make_chain(tool_round)
    nul = "before\x00after"
    call = {"id": "call_bbbbbbbbbbbbbbbbbbbbbbbb", "type": "function",
            "function": {"name": "terminal", "arguments": '{"input": "%s"}' % ("\\u0000" if where == "arguments"
                                                                               else "id")}}
    batches = {"content": [{"role": "user", "content": nul}],
               "tool_output": [{"role": "user", "content": "go"}, {"role": "assistant", "content": None,
                               "tool_calls": [call]}, {"role": "tool", "tool_call_id": call["id"], "content": nul}],
               "arguments": [{"role": "user", "content": "go"}, {"role": "assistant", "content": None,
                             "tool_calls": [call]}],
               "tool_call_id": [{"role": "user", "content": "go"}, {"role": "assistant", "content": None,
                                "tool_calls": [{**call, "id": nul}]}, {"role": "tool", "tool_call_id": nul,
                                                                      "content": "out"}],
               "name": [{"role": "user", "content": "go", "name": nul}]}
    before = row_counts()
    if where == "title":
        response = api_client.post("/api/flows", {"title": nul})
    elif where.startswith("import"):
        field = {"import_title": "title", "import_model": "model"}[where]
        data = {"model": nul, "messages": tool_round} if field == "model" else tool_round
        response = api_client.post("/api/import", {"data": data, **({"title": nul} if field == "title" else {})})
    else:
        response = api_client.post(f"/api/chains/{chain.pk}/messages", {"messages": batches[where]})
    if response.status_code >= 400:
        assert_client_error(response)
        assert row_counts() == before
    else:
        assert response.status_code == 201


@pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
def test_writes_to_unknown_api_paths_are_a_json_404_not_a_csrf_page(api_client, method):
    response = getattr(api_client, method)("/api/flows/null,null/agents", {"agent_type": "pentester"})
    assert response.status_code == 404
    assert response.json()["error"] == "not_found"
