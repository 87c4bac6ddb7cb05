"""`/settings/`: every summarizer setting per profile and per flow, save, `.env` export, preview on a chain.

Scope comes from GET/POST parameters: `profile` (agent | assistant) and `flow` (empty = the profile's
defaults, which only staff may change; a flow of yours = an override for that flow). "Preview" validates the
form and asks the pipeline what view those values would give on a chosen chain; nothing is saved.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseForbidden
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from flows.config import (
    SettingsError,
    compaction_provider_choices,
    defaults_for,
    settings_env_export,
    settings_for,
    settings_import_env,
    settings_save,
    settings_validate,
    settings_values,
    settings_warnings,
)
from flows.core import SETTINGS_FIELDS, parse_id
from flows.models import Chain, Flow, Profile, SummarizerSettings
from flows.pages.forms import EnvImportForm
from flows.pages.lookup import flow_or_404
from flows.pages.preview import preview_context
from flows.pages.selectors import WindowInfo, window_for_model
from flows.pipeline import preview_warm_later

__all__ = ["settings_page", "settings_export", "settings_import", "form_data", "differs_from_default"]

PREVIEW_CHAIN_CHOICES = 50
PREVIEW_PARTIAL = "flows/partials/preview.html"
PARTIAL_HEADER = "X-Partial"  # "preview": answer with the preview section only (static/js/settings.js)
GROUP_TITLES = {"summarizer": "Chain summarizer (PentAGI, sizes in bytes)",
                "strategy": "When to summarize: PentAGI's byte budgets or the model's window",
                "compaction": "Compaction: fitting the model's window (tokens)"}


def _scope(request: HttpRequest, params: Mapping[str, str]) -> tuple[str, Flow | None]:
    profile = params.get("profile", Profile.AGENT)
    profile = profile if profile in Profile.values else Profile.AGENT
    flow_id = parse_id(params.get("flow"))
    flow = flow_or_404(request, flow_id) if flow_id is not None else None
    return profile, flow


def form_data(post: Mapping[str, Any], profile: str) -> dict[str, Any]:
    """Setting values from a submitted form: every editable field is on the form, so a missing checkbox = off."""
    data: dict[str, Any] = {}
    for spec in SETTINGS_FIELDS:
        if not spec.editable(profile):
            continue
        if spec.kind == "bool":
            data[spec.name] = post.get(spec.name) in ("on", "true", "1")
        elif spec.name in post:
            data[spec.name] = post.get(spec.name)
    return data


def differs_from_default(value: Any, default: Any) -> bool:
    """Whether a shown value really differs from the default: a re-rendered form holds the posted strings
    ("51200", "" for auto), which must not read as changes against the typed defaults (51200, None)."""
    if isinstance(default, bool):
        return (value in (True, "on", "true", "1")) != default
    value_empty, default_empty = value in (None, ""), default in (None, "")
    if value_empty or default_empty:
        return value_empty != default_empty
    return str(value).strip() != str(default)


def _fields(profile: str, values: Mapping[str, Any], errors: Mapping[str, str]) -> dict[str, list[dict[str, Any]]]:
    defaults = defaults_for(profile)
    warnings = settings_warnings(values)
    groups: dict[str, list[dict[str, Any]]] = {g: [] for g in GROUP_TITLES}
    for spec in SETTINGS_FIELDS:
        value = values.get(spec.name)
        kind, choices = spec.kind, spec.choices
        if spec.name == "compaction_provider":  # installed providers by name ("" = the built-in summary)
            kind, choices = "choice", compaction_provider_choices(value if isinstance(value, str) else "")
        groups.setdefault(spec.group, []).append({
            "name": spec.name, "env": spec.env[profile] or "", "kind": kind, "unit": spec.unit,
            "help": spec.help, "default": defaults[spec.name], "value": "" if value is None else value,
            "choices": choices, "editable": spec.editable(profile), "bounds": spec.bounds,
            "changed": differs_from_default(value, defaults[spec.name]), "error": errors.get(spec.name, ""),
            "warning": warnings.get(spec.name, ""),
        })
    return {GROUP_TITLES.get(g, g): rows for g, rows in groups.items()}


def _preview_chains(request: HttpRequest, flow: Flow | None) -> list[Chain]:
    qs = Chain.objects.visible_to(request.user).filter(is_active=True).select_related("agent__flow")
    if flow is not None:
        qs = qs.filter(agent__flow=flow)
    return list(qs.order_by("-updated_at")[:PREVIEW_CHAIN_CHOICES])


def _window_checked(flow: Flow | None, chain_id: int | None, chains: list[Chain]) -> WindowInfo | None:
    """The window these settings run against: the scope's flow, else the flow of the chain picked for preview."""
    if flow is None:
        flow = next((c.agent.flow for c in chains if c.pk == chain_id), None)
    return window_for_model(flow.model_name) if flow is not None and flow.model_name else None


def _picked_chain(chain_id: int | None, chains: list[Chain]) -> int | None:
    """The chain the preview runs on: the one asked for, else the most recently updated one offered."""
    return chain_id or (chains[0].pk if chains else None)


def _render(request: HttpRequest, *, profile: str, flow: Flow | None, values: Mapping[str, Any],
            errors: Mapping[str, str] | None = None, preview: dict[str, Any] | None = None,
            chain_id: int | None = None, status: int = 200, warm: bool = False) -> HttpResponse:
    row = settings_for(profile=profile, flow=flow)
    chains = _preview_chains(request, flow)
    picked = _picked_chain(chain_id, chains)
    context = {
        "nav": "settings", "profile": profile, "profiles": Profile.values, "flow": flow,
        "flows": list(Flow.objects.visible_to(request.user).order_by("-updated_at")[:200]),
        "groups": _fields(profile, values, errors or {}), "errors": errors or {},
        "has_override": row.flow_id is not None and flow is not None,
        "can_save": flow is not None or request.user.is_staff, "chains": chains,
        "chain_id": picked, "preview": preview,
        "history": list(row.changes.select_related("user")[:10]),
        "window_checked": _window_checked(flow, picked, chains),
        "import_form": EnvImportForm() if request.user.is_staff else None,
    }
    response = render(request, "flows/settings.html", context, status=status)
    if warm and picked is not None and any(c.pk == picked for c in chains):  # only a chain the user may see
        # the page's first preview posts these same values: warm its caches (once the page is rendered, in a
        # thread) while the user reads the page
        preview_warm_later(chain_id=picked, settings=dict(values))
    return response


def _wants_partial(request: HttpRequest) -> bool:
    """static/js/settings.js previews as you type and swaps in only the preview section."""
    return request.headers.get(PARTIAL_HEADER) == "preview"


@login_required
@require_http_methods(["GET", "POST"])
def settings_page(request: HttpRequest) -> HttpResponse:
    params = request.POST if request.method == "POST" else request.GET
    profile, flow = _scope(request, params)
    chain_id = parse_id(params.get("chain"))
    row = settings_for(profile=profile, flow=flow)
    if request.method == "GET":
        return _render(request, profile=profile, flow=flow, values=settings_values(row), chain_id=chain_id,
                       warm=True)
    data = form_data(request.POST, profile)
    posted = {**settings_values(row), **data}
    try:
        cleaned = settings_validate(data, base=row, profile=profile)
    except SettingsError as exc:
        if _wants_partial(request) and request.POST.get("action") == "preview":
            error = "; ".join(f"{name}: {message}" for name, message in exc.errors.items())
            return render(request, PREVIEW_PARTIAL, {"preview": {"error": error}}, status=400)
        return _render(request, profile=profile, flow=flow, values=posted, errors=exc.errors, chain_id=chain_id,
                       status=400)
    if request.POST.get("action") == "preview":
        preview = preview_context(request, chain_id=chain_id, settings={**settings_values(row), **cleaned})
        status = 400 if preview.get("error") else 200
        if _wants_partial(request):
            return render(request, PREVIEW_PARTIAL, {"preview": preview}, status=status)
        return _render(request, profile=profile, flow=flow, values={**settings_values(row), **cleaned},
                       preview=preview, chain_id=chain_id, status=status)
    return _save(request, profile=profile, flow=flow, data=cleaned, chain_id=chain_id)


def _save(request: HttpRequest, *, profile: str, flow: Flow | None, data: dict[str, Any],
          chain_id: int | None) -> HttpResponse:
    if flow is None and not request.user.is_staff:
        return HttpResponseForbidden("Only staff can change the defaults; choose one of your flows to override them.")
    _, change = settings_save(profile=profile, flow=flow, data=data, user=request.user, source="page")
    if change is None:
        messages.info(request, "Nothing changed.")
    else:
        messages.success(request, f"Saved {len(change.changes)} setting(s); they apply from the next agent turn.")
    query = f"?profile={profile}" + (f"&flow={flow.pk}" if flow else "") + (f"&chain={chain_id}" if chain_id else "")
    return redirect(reverse("settings") + query)


@login_required
@require_POST
def settings_import(request: HttpRequest) -> HttpResponse:
    """A pasted or uploaded PentAGI `.env` into both profiles' defaults (staff only); each refused variable is
    reported by name and the good ones are saved."""
    if not request.user.is_staff:
        return HttpResponseForbidden("Only staff can change the defaults.")
    form = EnvImportForm(request.POST, request.FILES)
    if not form.is_valid():
        for error in form.errors.get("__all__", []) + form.errors.get("text", []) + form.errors.get("file", []):
            messages.error(request, f"Nothing imported: {error}")
        return redirect(reverse("settings"))
    report = settings_import_env(form.cleaned_data["environ"], user=request.user)
    (messages.success if report.changed else messages.info)(request, report.summary())
    for message in report.rejected.values():
        messages.error(request, f"Refused {message}")
    return redirect(reverse("settings"))


@login_required
@require_GET
def settings_export(request: HttpRequest) -> HttpResponse:
    """The scope's settings as a PentAGI `.env` file."""
    profile, flow = _scope(request, request.GET)
    row: SummarizerSettings = settings_for(profile=profile, flow=flow)
    response = HttpResponse(settings_env_export(row), content_type="text/plain; charset=utf-8")
    name = f"pentagi-{profile}" + (f"-flow{flow.pk}" if flow else "") + ".env"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response
