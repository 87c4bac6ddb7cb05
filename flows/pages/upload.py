"""`/flows/upload/`: upload a transcript in the browser; it becomes a new flow at once or replays live."""
from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from flows.engine import FormatError, import_chain
from flows.ingest import AppendError, chain_import, chain_replay_create, chain_replay_start
from flows.pages.forms import TranscriptUploadForm

__all__ = ["upload_page"]


def _render(request: HttpRequest, form: TranscriptUploadForm, status: int = 200) -> HttpResponse:
    return render(request, "flows/upload.html", {"form": form, "nav": "flows"}, status=status)


def _bound_form(request: HttpRequest) -> TranscriptUploadForm | None:
    try:
        return TranscriptUploadForm(request.POST, request.FILES)
    except RequestDataTooBig:
        return None


@login_required
@require_http_methods(["GET", "POST"])
def upload_page(request: HttpRequest) -> HttpResponse:
    if request.method == "GET":
        return _render(request, TranscriptUploadForm())
    form = _bound_form(request)
    if form is None:
        form = TranscriptUploadForm()
        form.add_error(None, "The upload is too large.")
        return _render(request, form, status=413)
    if not form.is_valid():
        return _render(request, form, status=400)
    upload = form.cleaned_data["file"]
    if upload.size > settings.DATA_UPLOAD_MAX_MEMORY_SIZE:
        form.add_error("file", f"At most {settings.DATA_UPLOAD_MAX_MEMORY_SIZE // (1024 * 1024)} MiB.")
        return _render(request, form, status=413)
    data, fmt = upload.read(), form.cleaned_data["format"] or None
    title, profile = form.cleaned_data["title"] or upload.name, form.cleaned_data["profile"]
    try:
        if form.cleaned_data["replay"]:
            chain, batches = chain_replay_create(owner=request.user, messages=import_chain(data, fmt), title=title,
                                                 profile=profile)
            chain_replay_start(chain=chain, batches=batches, speed=form.cleaned_data["speed"] or 1.0)
            messages.success(request, f"Replaying {sum(map(len, batches))} messages live into this chain.")
        else:
            chain = chain_import(owner=request.user, data=data, fmt=fmt, title=title, profile=profile)
            messages.success(request, f"Imported {chain.last_seq} messages; the summary follows in a moment.")
    except (FormatError, AppendError, ValueError) as exc:
        form.add_error("file", str(exc)[:500])
        return _render(request, form, status=400)
    return redirect("chain-detail", chain_id=chain.pk)
