"""Django admin: history is read-only, settings edits go through the settings service (validation + history)."""
from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path

from flows.config import SettingsError, settings_create, settings_env_export_rows, settings_import_env, settings_update
from flows.core import SETTINGS_FIELDS
from flows.models import (
    Agent,
    ApiToken,
    Chain,
    ChainView,
    Flow,
    GatewayCall,
    LLMCall,
    MemoryNote,
    Message,
    ModelWindow,
    ProviderConfig,
    SettingsChange,
    SummarizerSettings,
    SummaryEvent,
    ViewSection,
)
from flows.pages import EnvImportForm, ProviderConfigForm, SummarizerSettingsForm

__all__ = ["ReadOnlyAdmin", "SummarizerSettingsAdmin"]


class ReadOnlyAdmin(admin.ModelAdmin):
    """Stored history is never changed or deleted through the admin."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class AgentInline(admin.TabularInline):
    model = Agent
    extra = 0
    fields = ["agent_type", "profile", "created_at"]
    readonly_fields = ["created_at"]


@admin.register(Flow)
class FlowAdmin(admin.ModelAdmin):
    list_display = ["id", "title", "status", "owner", "model_name", "updated_at"]
    list_filter = ["status"]
    search_fields = ["title", "model_name"]
    inlines = [AgentInline]


@admin.register(Agent)
class AgentAdmin(admin.ModelAdmin):
    list_display = ["id", "flow", "agent_type", "profile", "created_at"]
    list_filter = ["agent_type", "profile"]


@admin.register(Chain)
class ChainAdmin(admin.ModelAdmin):
    list_display = ["id", "agent", "is_active", "last_seq", "view_version", "compactions", "updated_at"]
    readonly_fields = ["last_seq", "view_version", "compactions", "parent"]


@admin.register(Message)
class MessageAdmin(ReadOnlyAdmin):
    list_display = ["id", "chain", "seq", "role", "tool_call_id", "byte_size", "token_count", "created_at"]
    list_filter = ["role"]
    search_fields = ["tool_call_id"]


@admin.register(ChainView)
class ChainViewAdmin(ReadOnlyAdmin):
    list_display = ["id", "chain", "version", "raw_seq_to", "byte_size", "token_count", "created_at"]
    exclude = ["messages"]


@admin.register(ViewSection)
class ViewSectionAdmin(ReadOnlyAdmin):
    list_display = ["id", "view", "index", "byte_size"]


@admin.register(SummaryEvent)
class SummaryEventAdmin(ReadOnlyAdmin):
    list_display = ["id", "chain", "trigger", "outcome", "bytes_before", "bytes_after", "tokens_before",
                    "tokens_after", "calls", "duration_ms", "created_at"]
    list_filter = ["trigger", "outcome"]


@admin.register(GatewayCall)
class GatewayCallAdmin(ReadOnlyAdmin):
    list_display = ["id", "chain", "mode", "model", "status", "http_status", "attempts", "sent_message_count",
                    "latency_ms", "cost_usd", "created_at"]
    list_filter = ["mode", "status", "stream"]


@admin.register(LLMCall)
class LLMCallAdmin(ReadOnlyAdmin):
    list_display = ["id", "event", "model", "prompt_tokens", "completion_tokens", "cost_usd", "ok", "created_at"]
    list_filter = ["ok", "cached"]


@admin.register(MemoryNote)
class MemoryNoteAdmin(admin.ModelAdmin):
    list_display = ["id", "flow", "kind", "text", "created_at"]
    list_filter = ["kind"]


@admin.register(SettingsChange)
class SettingsChangeAdmin(ReadOnlyAdmin):
    list_display = ["id", "label", "user", "source", "changes", "changed_at"]
    list_filter = ["source"]


class SettingsChangeInline(admin.TabularInline):
    model = SettingsChange
    extra = 0
    fields = ["changed_at", "user", "source", "changes"]
    readonly_fields = fields
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(SummarizerSettings)
class SummarizerSettingsAdmin(admin.ModelAdmin):
    form = SummarizerSettingsForm
    list_display = ["__str__", "profile", "flow", "last_sec_bytes", "max_qa_bytes", "updated_at", "updated_by"]
    list_filter = ["profile"]
    inlines = [SettingsChangeInline]
    actions = ["export_env"]
    change_list_template = "admin/flows/summarizersettings/change_list.html"
    fieldsets = [
        (None, {"fields": ["profile", "flow"]}),
        ("PentAGI chain summarizer (bytes)", {"fields": [f.name for f in SETTINGS_FIELDS if f.group == "summarizer"]}),
        ("When to summarize: PentAGI's byte budgets or the model's window",
         {"fields": [f.name for f in SETTINGS_FIELDS if f.group == "strategy"]}),
        ("Compaction: fitting the model's window (tokens)",
         {"fields": [f.name for f in SETTINGS_FIELDS if f.group == "compaction"]}),
    ]

    def get_urls(self) -> list[URLPattern]:
        view = self.admin_site.admin_view(self.import_env_view)
        return [path("import-env/", view, name="flows_summarizersettings_import_env"), *super().get_urls()]

    def import_env_view(self, request: HttpRequest) -> HttpResponse:
        """Import a PentAGI .env into both profiles' defaults; each refused variable is reported by name."""
        if not self.has_change_permission(request):
            raise PermissionDenied
        form = EnvImportForm(request.POST or None, request.FILES or None)
        if request.method == "POST" and form.is_valid():
            report = settings_import_env(form.cleaned_data["environ"], user=request.user)
            self.message_user(request, report.summary(), level=messages.SUCCESS if report.changed else messages.INFO)
            for message in report.rejected.values():
                self.message_user(request, f"Refused {message}", level=messages.ERROR)
            return redirect("admin:flows_summarizersettings_changelist")
        context = {**self.admin_site.each_context(request), "form": form, "opts": self.model._meta,
                   "title": "Import settings from a .env"}
        return TemplateResponse(request, "admin/flows/summarizersettings/import_env.html", context)

    def save_model(self, request: HttpRequest, obj: SummarizerSettings, form: Any, change: bool) -> None:
        """Edits go through settings_update so the admin writes the same history as every other path."""
        if not change:
            settings_create(row=obj, user=request.user, source="admin")
            return
        data = {name: form.cleaned_data[name] for name in form.changed_data if name in form.cleaned_data
                and name not in ("profile", "flow")}
        stored = SummarizerSettings.objects.get(pk=obj.pk)
        try:
            settings_update(row=stored, data=data, user=request.user, source="admin")
        except SettingsError as exc:  # the form validated already; a race with another edit lands here
            self.message_user(request, f"not saved: {exc}", level=messages.ERROR)

    @admin.action(description="Export as .env")
    def export_env(self, request: HttpRequest, queryset: QuerySet[SummarizerSettings]) -> HttpResponse:
        """One file, each variable defined once: other rows of a profile follow as commented-out sections."""
        resp = HttpResponse(settings_env_export_rows(queryset), content_type="text/plain; charset=utf-8")
        resp["Content-Disposition"] = 'attachment; filename="summarizer.env"'
        return resp


@admin.register(ProviderConfig)
class ProviderConfigAdmin(admin.ModelAdmin):
    form = ProviderConfigForm
    list_display = ["name", "kind", "base_url", "model", "masked_key", "is_default"]


@admin.register(ModelWindow)
class ModelWindowAdmin(admin.ModelAdmin):
    """An admin's row is an override (no provider); discovered rows name the provider that reported them."""

    list_display = ["model", "provider", "context_window", "max_output_tokens", "source", "updated_at"]
    readonly_fields = ["provider"]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["prefix", "name", "user", "created_at", "last_used_at"]
    fields = ["user", "name", "prefix", "created_at", "last_used_at"]
    readonly_fields = ["prefix", "created_at", "last_used_at"]

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # tokens are issued with `manage.py create_api_token`, which shows the raw value once
