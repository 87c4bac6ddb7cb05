"""flows.config.endpoints: the env provider, window discovery from GET /models, and window precedence."""
from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from flows.config import endpoints as providers
from flows.config import model_window_for, provider_for, provider_from_env, split_model_ref, table_copy
from flows.config.endpoints import DEFAULT_OPENAI_BASE_URL, discover_window
from flows.ingest import flow_create
from flows.models import ModelWindow, ProviderConfig
from summarizer import lookup_model

from .llm_fakes import (
    closed_port_url,
    isolated_llm,  # noqa: F401  (an autouse fixture)
    make_provider,
)

pytestmark = pytest.mark.django_db


LLAMA_SERVER_ENV = {"LLM_SERVER_URL": "http://127.0.0.1:8011/v1", "LLM_SERVER_KEY": "local-key-5678",
                    "LLM_SERVER_MODEL": "gemma-3-270m"}


@pytest.fixture
def flow():
    owner = get_user_model().objects.create_user("providers-owner")
    return flow_create(owner=owner, title="providers", model_name="gpt-4o")


def test_no_endpoint_variables_create_no_provider():
    assert provider_from_env({"UNRELATED": "1"}) is None
    assert ProviderConfig.objects.count() == 0


def test_the_llm_server_variables_create_the_default_env_provider():
    provider = provider_from_env(LLAMA_SERVER_ENV)
    assert (provider.name, provider.kind, provider.is_default) == ("env", "openai", True)
    assert (provider.base_url, provider.api_key, provider.model) == (
        "http://127.0.0.1:8011/v1", "local-key-5678", "gemma-3-270m")


def test_an_openai_key_alone_points_at_openai_with_a_default_model():
    provider = provider_from_env({"OPENAI_API_KEY": "sk-abc-123456789"})
    assert (provider.base_url, provider.api_key) == (DEFAULT_OPENAI_BASE_URL, "sk-abc-123456789")
    assert provider.model


def test_a_later_environment_updates_the_row_but_keeps_admin_edited_fields():
    provider = provider_from_env(LLAMA_SERVER_ENV)
    ProviderConfig.objects.filter(pk=provider.pk).update(prompt_cost_per_mtok=1.5)
    updated = provider_from_env({**LLAMA_SERVER_ENV, "LLM_SERVER_MODEL": "qwen2.5-7b"})
    assert (updated.pk, updated.model, updated.prompt_cost_per_mtok) == (provider.pk, "qwen2.5-7b", 1.5)
    assert ProviderConfig.objects.count() == 1


def test_pentagis_anthropic_variables_make_the_anthropic_provider_never_the_default():
    """ANTHROPIC_SERVER_URL / ANTHROPIC_API_KEY (issue 21): the provider /v1/messages goes to; summaries keep theirs."""
    env = {**LLAMA_SERVER_ENV, "ANTHROPIC_SERVER_URL": "http://claude-proxy:8080/v1", "ANTHROPIC_API_KEY": "sk-ant-1"}
    assert provider_from_env(env).name == "env"
    claude = ProviderConfig.objects.get(name="anthropic")
    assert (claude.kind, claude.base_url, claude.api_key, claude.is_default) == (
        "anthropic", "http://claude-proxy:8080/v1", "sk-ant-1", False)
    assert providers.provider_of_kind("anthropic") == claude
    provider_from_env({**env, "ANTHROPIC_API_KEY": "sk-ant-2"})  # a later environment updates the same row
    assert list(ProviderConfig.objects.filter(kind="anthropic").values_list("api_key", flat=True)) == ["sk-ant-2"]
    provider_from_env({"ANTHROPIC_API_KEY": "sk-ant-3"})  # a key alone points at Anthropic itself
    assert ProviderConfig.objects.get(name="anthropic").base_url == providers.DEFAULT_ANTHROPIC_BASE_URL


def test_the_env_provider_does_not_take_the_default_from_an_admin_provider():
    admin_default = make_provider("http://127.0.0.1:9/v1", name="admin-one")
    provider_from_env(LLAMA_SERVER_ENV)
    assert ProviderConfig.objects.get(is_default=True) == admin_default


def test_the_environment_is_read_on_first_use(monkeypatch, flow):
    for name, value in LLAMA_SERVER_ENV.items():
        monkeypatch.setenv(name, value)
    assert provider_for(flow=flow).name == "env"


def test_model_calls_skip_the_env_sync_while_the_variables_are_unchanged(monkeypatch, flow,
                                                                          django_assert_num_queries):
    for name, value in LLAMA_SERVER_ENV.items():
        monkeypatch.setenv(name, value)
    provider_for(flow=flow)  # first use: the env row is written
    with django_assert_num_queries(1):  # the default row only
        assert provider_for(flow=flow).name == "env"
    monkeypatch.setenv("LLM_SERVER_MODEL", "qwen2.5-7b")
    assert provider_for(flow=flow).model == "qwen2.5-7b"  # changed variables: synced again


def test_a_deleted_env_row_is_written_again_on_next_use(monkeypatch, flow):
    for name, value in LLAMA_SERVER_ENV.items():
        monkeypatch.setenv(name, value)
    provider_for(flow=flow)
    ProviderConfig.objects.all().delete()
    assert provider_for(flow=flow).name == "env"


def test_a_context_size_from_the_environment_gives_the_model_a_window(flow):
    provider_from_env({**LLAMA_SERVER_ENV, "LLM_SERVER_CONTEXT_TOKENS": "8192"})
    assert model_window_for(model="gemma-3-270m") == (8192, None, "override (env)")


def test_a_provider_prefix_is_split_only_when_it_names_a_provider():
    cheap = make_provider("http://127.0.0.1:9/v1", name="cheap")
    assert split_model_ref("cheap/mini") == (cheap, "mini")
    assert split_model_ref("meta-llama/llama-3-8b") == (None, "meta-llama/llama-3-8b")


def test_a_window_reported_by_the_endpoint_is_discovered_and_stored(fake_endpoint):
    fake_endpoint.models_payload = {"object": "list", "data": [{"id": "my-vllm-model", "max_model_len": 32768}]}
    provider = make_provider(fake_endpoint.url)
    info = discover_window(provider, "my-vllm-model")
    assert info.context_window == 32768
    row = ModelWindow.objects.get(model="my-vllm-model")
    assert (row.context_window, row.source, row.provider_id) == (32768, "discovered", provider.pk)
    assert model_window_for(model="my-vllm-model", provider=provider)[::2] == (32768, "discovered from fake")


def test_discovery_never_overwrites_an_admin_override(fake_endpoint):
    ModelWindow.objects.create(model="my-vllm-model", context_window=16384, source="admin")
    fake_endpoint.models_payload = {"data": [{"id": "my-vllm-model", "context_length": 65536}]}
    discover_window(make_provider(fake_endpoint.url), "my-vllm-model")
    assert model_window_for(model="my-vllm-model") == (16384, None, "override (admin)")


def test_a_listing_without_a_window_like_llama_cpp_stores_nothing(fake_endpoint):
    fake_endpoint.models_payload = {"object": "list", "data": [{"id": "gemma-3-270m", "object": "model",
                                                                "owned_by": "me", "permissions": []}]}
    assert discover_window(make_provider(fake_endpoint.url), "gemma-3-270m") is None
    assert not ModelWindow.objects.exists()


def test_an_unreachable_endpoint_discovers_nothing():
    assert discover_window(make_provider(closed_port_url(), timeout_seconds=1), "any") is None


def test_the_catalog_answers_when_there_is_no_row(flow):
    info = lookup_model("gpt-4o")
    assert model_window_for(flow=flow) == (info.context_window, info.max_output_tokens, "catalog")


def test_an_unknown_model_has_an_unknown_window():
    assert model_window_for(model="my-homebrew-model-xyz") == (None, None, "unknown")


def test_the_flows_endpoint_is_asked_for_an_unknown_window_once(fake_endpoint, flow):
    fake_endpoint.models_payload = {"data": [{"id": "qwen-local", "context_length": 40960}]}
    flow.provider = make_provider(fake_endpoint.url)
    flow.model_name = "qwen-local"
    flow.save()
    assert model_window_for(flow=flow) == (40960, None, "discovered from fake")
    ModelWindow.objects.all().delete()  # not asked again in this process, even without a stored row
    assert model_window_for(flow=flow) == (None, None, "unknown")
    assert fake_endpoint.model_listings == 1


def test_a_listing_of_another_model_stores_nothing_and_the_catalog_answers(fake_endpoint, flow):
    # issue 20: a llama.cpp server's one file is not the window of whatever model name a call carries
    fake_endpoint.models_payload = {"data": [{"id": "/models/qwen.gguf", "meta": {"n_ctx": 8192}}]}
    flow.provider = make_provider(fake_endpoint.url)
    flow.model_name = "gpt-4o-mini"
    flow.save()
    assert model_window_for(flow=flow) == (128_000, 16_384, "catalog")
    assert fake_endpoint.model_listings == 1 and not ModelWindow.objects.exists()


def test_the_routed_provider_is_asked_not_the_flows_and_each_keeps_its_own_window(fake_endpoint, flow):
    fake_endpoint.models_payload = {"data": [{"id": "shared-model", "context_length": 65536}]}
    default = make_provider(closed_port_url(), name="default", timeout_seconds=1)
    routed = make_provider(fake_endpoint.url, name="routed", default=False)
    flow.provider, flow.model_name = default, "shared-model"
    flow.save()
    assert model_window_for(flow=flow, model="shared-model", provider=routed) == (65536, None,
                                                                                  "discovered from routed")
    assert model_window_for(flow=flow) == (None, None, "unknown")  # the default reported nothing
    assert list(ModelWindow.objects.values_list("provider__name", flat=True)) == ["routed"]


def test_a_prefix_naming_the_provider_is_stripped_before_matching(fake_endpoint):
    fake_endpoint.models_payload = {"data": [{"id": "qwen-local", "context_length": 40960}]}
    routed = make_provider(fake_endpoint.url, name="lab")
    assert discover_window(routed, "lab/qwen-local").context_window == 40960
    assert model_window_for(model="lab/qwen-local", provider=routed) == (40960, None, "discovered from lab")
    assert ModelWindow.objects.get().model == "qwen-local"


def test_an_override_wins_over_every_providers_discovery(fake_endpoint):
    fake_endpoint.models_payload = {"data": [{"id": "qwen-local", "context_length": 40960}]}
    routed = make_provider(fake_endpoint.url, name="lab")
    discover_window(routed, "qwen-local")
    ModelWindow.objects.create(model="qwen-local", context_window=20000, source="admin")
    assert model_window_for(model="qwen-local", provider=routed) == (20000, None, "override (admin)")


def test_an_override_named_as_the_agent_names_the_model_applies_to_the_routed_call(fake_endpoint, flow):
    """The demo stores its window as "demo/pentest-agent-16k" (the model its agent asks for); the gateway routes
    that to provider demo, model "pentest-agent-16k": the window must still be known there, else nothing fits the
    view before the call and the demo's upstream refuses an overflow nothing recovers from."""
    routed = make_provider(fake_endpoint.url, name="lab")  # its listing reports no window
    ModelWindow.objects.create(model="lab/qwen-local", context_window=16384, source="demo")
    assert model_window_for(model="lab/qwen-local", provider=routed) == (16384, None, "override (demo)")
    # as a gateway call's route names it (the provider, and the id it serves): the same window
    assert model_window_for(flow=flow, provider=routed, model="qwen-local")[0] == 16384
    ModelWindow.objects.create(model="qwen-local", context_window=8192, source="admin")
    assert model_window_for(flow=flow, provider=routed, model="qwen-local")[0] == 16384  # the named one wins


def test_a_bare_model_id_asks_no_endpoint(fake_endpoint):
    fake_endpoint.models_payload = {"data": [{"id": "qwen-local", "context_length": 40960}]}
    make_provider(fake_endpoint.url, name="lab")
    assert model_window_for(model="qwen-local") == (None, None, "unknown")
    assert fake_endpoint.model_listings == 0


@pytest.mark.django_db(transaction=True)
def test_outside_transactions_providers_are_cached_and_an_edit_in_this_process_drops_the_copy(monkeypatch):
    providers.providers_changed()
    ProviderConfig.objects.create(name="cached", kind="openai", base_url="http://one.example/v1")
    assert split_model_ref("cached/m")[0].base_url == "http://one.example/v1"
    # another process's write (no signal here): seen once the copy is older than TABLE_COPY_SECONDS
    ProviderConfig.objects.filter(name="cached").update(base_url="http://two.example/v1")
    assert split_model_ref("cached/m")[0].base_url == "http://one.example/v1"
    monkeypatch.setattr(table_copy, "TABLE_COPY_SECONDS", 0.0)
    assert split_model_ref("cached/m")[0].base_url == "http://two.example/v1"
    monkeypatch.setattr(table_copy, "TABLE_COPY_SECONDS", 60.0)
    row = ProviderConfig.objects.get(name="cached")
    row.base_url = "http://three.example/v1"
    row.save()  # this process's edit: seen at once
    found = split_model_ref("cached/m")[0]
    assert found.base_url == "http://three.example/v1"
    found.base_url = "changed by a caller"  # a caller's copy, not the cache's
    assert split_model_ref("cached/m")[0].base_url == "http://three.example/v1"
    row.delete()
    assert split_model_ref("cached/m") == (None, "cached/m")
    # one created by another process (no signal here) is found at once: a name not cached is read again
    ProviderConfig.objects.bulk_create([ProviderConfig(name="elsewhere", kind="openai")])
    assert split_model_ref("elsewhere/m")[0].name == "elsewhere"


@pytest.mark.django_db(transaction=True)
def test_outside_transactions_windows_come_from_a_copy_that_an_edit_in_this_process_drops(monkeypatch):
    providers.WINDOWS.drop()
    assert model_window_for(model="copy-model") == (None, None, "unknown")
    row = ModelWindow.objects.create(model="copy-model", context_window=20000, source="admin")  # this process
    assert model_window_for(model="copy-model") == (20000, None, "override (admin)")
    ModelWindow.objects.filter(pk=row.pk).update(context_window=30000)  # another process's write: no signal
    assert model_window_for(model="copy-model")[0] == 20000
    monkeypatch.setattr(table_copy, "TABLE_COPY_SECONDS", 0.0)
    assert model_window_for(model="copy-model")[0] == 30000
    monkeypatch.setattr(table_copy, "TABLE_COPY_SECONDS", 60.0)
    ModelWindow.objects.get(pk=row.pk).delete()
    assert model_window_for(model="copy-model") == (None, None, "unknown")
