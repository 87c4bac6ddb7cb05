"""`/providers/`: connect an upstream from the browser (staff): list, add, edit, test the connection, delete.

The key is write-only (`ProviderConfigForm`, shared with the admin): the page shows its last four characters at
most. A user who is not staff is told how to become staff instead of getting a bare login form.
"""
from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from flows.gateway import provider_check
from flows.models import ProviderConfig
from flows.pages.forms import ProviderConfigForm
from flows.pages.lookup import provider_or_404

__all__ = ["providers_page", "provider_edit_page", "provider_test", "provider_delete"]

View = Callable[..., HttpResponse]


def staff_only(view: View) -> View:
    """Logged in and staff; anyone else gets the page that says how to become staff (403), nothing changes."""
    @login_required
    @wraps(view)
    def guarded(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_staff:
            return render(request, "flows/providers_not_staff.html", {"nav": "providers"}, status=403)
        return view(request, *args, **kwargs)
    return guarded


def _render_form(request: HttpRequest, form: ProviderConfigForm, provider: ProviderConfig | None,
                 status: int = 200) -> HttpResponse:
    return render(request, "flows/provider_form.html", {"form": form, "provider": provider, "nav": "providers"},
                  status=status)


@require_http_methods(["GET"])
@staff_only
def providers_page(request: HttpRequest) -> HttpResponse:
    return render(request, "flows/providers.html", {"providers": ProviderConfig.objects.all(), "nav": "providers"})


@require_http_methods(["GET", "POST"])
@staff_only
def provider_edit_page(request: HttpRequest, provider_id: int | None = None) -> HttpResponse:
    """Add (no id) or edit one provider; a refused form is shown again with its errors and nothing is saved."""
    provider = provider_or_404(provider_id) if provider_id is not None else None
    if request.method == "GET":
        return _render_form(request, ProviderConfigForm(instance=provider), provider)
    form = ProviderConfigForm(request.POST, instance=provider)
    if not form.is_valid():
        return _render_form(request, form, provider, status=400)
    saved = form.save()
    messages.success(request, f"Saved provider {saved.name}.")
    return redirect("providers")


@require_POST
@staff_only
def provider_test(request: HttpRequest, provider_id: int) -> HttpResponse:
    provider = provider_or_404(provider_id)
    result = provider_check(provider)
    (messages.success if result.ok else messages.error)(request, f"{provider.name}: {result.detail}")
    return redirect("providers")


@require_POST
@staff_only
def provider_delete(request: HttpRequest, provider_id: int) -> HttpResponse:
    provider = provider_or_404(provider_id)
    name = provider.name
    provider.delete()
    messages.success(request, f"Deleted provider {name}.")
    return redirect("providers")
